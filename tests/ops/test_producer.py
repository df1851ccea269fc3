"""The producer keeps trying what SQS throttles, whichever way orders are sent (an incident's orders too)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from unittest import mock

import boto3
import pytest

from harness.faults.chaos import SqsThrottled
from harness.workload.producer import Producer
from local_cloud.template import REGION

ORDERS: list[tuple[dict[str, Any], str | None]] = [
    ({"order_id": f"order-{i}", "amount": 1}, f"cid-{i}") for i in range(12)
]


@pytest.fixture
def queue(aws: None) -> Iterator[str]:
    yield boto3.client("sqs", region_name=REGION).create_queue(QueueName="orders")["QueueUrl"]


def _received(url: str) -> list[str]:
    sqs = boto3.client("sqs", region_name=REGION)
    bodies: list[str] = []
    while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        bodies += [m["Body"] for m in batch]
        sqs.delete_message_batch(
            QueueUrl=url, Entries=[{"Id": m["MessageId"], "ReceiptHandle": m["ReceiptHandle"]} for m in batch]
        )
    return bodies


def _throttled_first(times: int) -> Any:
    """moto's SendMessageBatch answering RequestThrottled ``times`` times (more than botocore retries)."""
    from moto.sqs.models import SQSBackend

    original = SQSBackend.send_message_batch
    left = [times]

    def send_message_batch(self: Any, *args: Any, **kwargs: Any) -> Any:
        if left[0] > 0:
            left[0] -= 1
            raise SqsThrottled()
        return original(self, *args, **kwargs)

    return mock.patch.object(SQSBackend, "send_message_batch", send_message_batch)


def test_producer_submit_retries_what_sqs_throttles(queue: str) -> None:
    producer = Producer(queue, "", "")
    with _throttled_first(3):
        producer.submit(ORDERS)
    assert sorted(json.loads(b)["order_id"] for b in _received(queue)) == sorted(o["order_id"] for o, _ in ORDERS)


def test_producer_submit_messages_retries_what_sqs_throttles(queue: str) -> None:
    producer = Producer(queue, "", "")
    with _throttled_first(3):
        producer.submit_messages([(json.dumps(order), cid) for order, cid in ORDERS])
    assert len(_received(queue)) == len(ORDERS)
