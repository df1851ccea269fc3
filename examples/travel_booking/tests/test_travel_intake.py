"""The intake on moto (no emulator): one execution per booking however often SQS delivers it; a malformed request
dead-lettered on its first receive, with its category and correlation ID."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

import booking_intake
from lambda_resilience.aws import reset_clients
from lambda_resilience.testing import FakeLambdaContext

ROLE = "arn:aws:iam::123456789012:role/saga"


@pytest.fixture
def saga(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    for key, value in {
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "POWERTOOLS_SERVICE_NAME": "intake",
    }.items():
        monkeypatch.setenv(key, value)
    with mock_aws():
        reset_clients()
        definition = {"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}
        arn = boto3.client("stepfunctions").create_state_machine(
            name="booking", definition=json.dumps(definition), roleArn=ROLE
        )["stateMachineArn"]
        dlq = boto3.client("sqs").create_queue(QueueName="requests-dlq")["QueueUrl"]
        monkeypatch.setenv("BOOKING_SAGA_ARN", arn)
        monkeypatch.setenv("REQUESTS_DLQ_URL", dlq)
        yield {"arn": arn, "dlq": dlq}
        reset_clients()


def _record(message_id: str, body: str) -> dict[str, Any]:
    return {
        "messageId": message_id,
        "receiptHandle": message_id,
        "body": body,
        "attributes": {"ApproximateReceiveCount": "1"},
        "messageAttributes": {"correlation_id": {"stringValue": f"cid-{message_id}", "dataType": "String"}},
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:requests",
    }


def test_travel_intake_redelivered_request_starts_one_execution(saga: dict[str, str]) -> None:
    body = json.dumps({"booking_id": "b-1", "card": "4242-4242-4242-4242"})
    event = {"Records": [_record("m1", body), _record("m2", body)]}  # SQS delivered it twice
    assert booking_intake.handler(event, FakeLambdaContext()) == {"batchItemFailures": []}
    executions = boto3.client("stepfunctions").list_executions(stateMachineArn=saga["arn"])["executions"]
    assert [e["name"] for e in executions] == ["booking-b-1"]
    described = boto3.client("stepfunctions").describe_execution(executionArn=executions[0]["executionArn"])
    assert json.loads(described["input"])["booking_id"] == "b-1"


def test_travel_intake_malformed_request_is_dead_lettered_at_once(saga: dict[str, str]) -> None:
    event = {"Records": [_record("m3", "not json"), _record("m4", json.dumps({"card": "4242"}))]}
    assert booking_intake.handler(event, FakeLambdaContext()) == {"batchItemFailures": []}  # not retried: dead-lettered
    dead = boto3.client("sqs").receive_message(
        QueueUrl=saga["dlq"], MessageAttributeNames=["All"], MaxNumberOfMessages=10
    )["Messages"]
    assert sorted(m["MessageAttributes"]["correlation_id"]["StringValue"] for m in dead) == ["cid-m3", "cid-m4"]
    assert {m["MessageAttributes"]["dlq_category"]["StringValue"] for m in dead} == {"permanent"}
    assert boto3.client("stepfunctions").list_executions(stateMachineArn=saga["arn"])["executions"] == []
