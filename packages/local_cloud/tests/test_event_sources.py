"""The local SQS event source: what a crashed invocation does to its batch."""

from __future__ import annotations

from pathlib import Path

import boto3

from local_cloud.clock import SimClock
from local_cloud.event_sources import EventSourceSpec, SqsPoller
from local_cloud.lambda_runtime import LocalFunction
from local_cloud.template import REGION

HANDLER = """
import json
from local_cloud.lambda_runtime import SimulatedCrash

def handler(event, context):
    bodies = [r["body"] for r in event["Records"]]
    if "crash" in bodies:
        raise SimulatedCrash("the sandbox died")
    return {"batchItemFailures": [
        {"itemIdentifier": r["messageId"]} for r in event["Records"] if r["body"] == "fail"
    ]}
"""


def _poller(tmp_path: Path, queue: str) -> tuple[SqsPoller, str]:
    (tmp_path / "h.py").write_text(HANDLER)
    sqs = boto3.client("sqs", region_name=REGION)
    url = sqs.create_queue(QueueName=queue)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    clock = SimClock()
    fn = LocalFunction("Fn", "fn", tmp_path, "h.handler", {}, 3.0, 128, [], clock)
    spec = EventSourceSpec(url, arn, fn, 10, True, 30, None)
    return SqsPoller(spec, clock), url


def _send(url: str, body: str, cid: str) -> None:
    boto3.client("sqs", region_name=REGION).send_message(
        QueueUrl=url,
        MessageBody=body,
        MessageAttributes={"correlation_id": {"DataType": "String", "StringValue": cid}},
    )


def test_sqs_poller_counts_receives_lost_to_a_crashed_invocation(aws: None, tmp_path: Path) -> None:
    poller, url = _poller(tmp_path, "crashing")
    _send(url, "crash", "cid-crash")
    _send(url, "innocent", "cid-innocent")
    assert poller.poll_once() == 2
    assert poller.interrupted == {"cid-crash": 1, "cid-innocent": 1}  # the whole batch came back
    assert poller.stats.failed_records == 2 and poller.stats.deleted == 0


def test_sqs_poller_partial_failure_is_not_an_interrupted_receive(aws: None, tmp_path: Path) -> None:
    poller, url = _poller(tmp_path, "partial")
    _send(url, "fail", "cid-fail")
    _send(url, "ok", "cid-ok")
    assert poller.poll_once() == 2
    assert poller.interrupted == {}
    assert poller.stats.failed_records == 1 and poller.stats.deleted == 1
