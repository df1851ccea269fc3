"""The automatic DLQ replay leaves a record a person can read (``ops dlq history``) and a log line naming each
message it moved: order, attempt, correlation ID, category; no customer data (issue 41, Build 6)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import boto3

from lambda_resilience.replay_history import read_history
from order_domain import env as env_names
from tests.handlers.conftest import REGION, LogCapture


def test_dlq_replay_records_each_automatic_run(
    load: Callable[..., Any], logs: LogCapture, lambda_context: Any, aws: None
) -> None:
    sqs, ddb = boto3.client("sqs", region_name=REGION), boto3.client("dynamodb", region_name=REGION)
    dlq = sqs.create_queue(QueueName="orders-dlq")["QueueUrl"]
    source = sqs.create_queue(QueueName="orders")["QueueUrl"]
    ddb.create_table(
        TableName="failures",
        KeySchema=[{"AttributeName": "message_id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "message_id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    body = {"order_id": "order-7", "payment_attempt": 2, "payment": {"token": "tok_secret"}, "customer": "Ada"}
    attributes = {
        "correlation_id": {"DataType": "String", "StringValue": "cid-7"},
        "dlq_category": {"DataType": "String", "StringValue": "transient"},
    }
    sqs.send_message(QueueUrl=dlq, MessageBody=json.dumps(body), MessageAttributes=attributes)
    targets = json.dumps([{"dlq_url": dlq, "source_url": source}])
    handler = load("dlq_replay", **{env_names.REPLAY_TARGETS: targets, env_names.FAILURES_TABLE_NAME: "failures"})

    handler({}, lambda_context)

    (run,) = read_history(lambda service: boto3.client(service, region_name=REGION), "failures", since_seconds=600)
    assert run["dlq"] == "orders-dlq" and run["skipped"] == 0
    assert [(m["order_id"], m["attempt"], m["correlation_id"], m["category"]) for m in run["replayed"]] == [
        ("order-7", 2, "cid-7", "transient")
    ]
    (line,) = logs.find("replay done")
    assert line["replayed_messages"][0]["order_id"] == "order-7"
    text = json.dumps(run) + json.dumps(logs.read())
    assert "tok_secret" not in text and "Ada" not in text
