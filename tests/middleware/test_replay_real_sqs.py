"""DLQ reads against SQS as AWS runs it, on botocore's Stubber (issue 41, Build 6).

Real SQS is distributed: a short-polled ReceiveMessage samples a subset of its servers and can
answer empty while the queue holds messages; long polling (``WaitTimeSeconds`` > 0) queries all of
them (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-short-and-long-polling.html).
moto has one server and never answers falsely empty, so these answers are scripted: a stopped read
is only "empty" after repeated empty receives with the queue's own counts at zero.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from lambda_resilience.receive import EMPTY_RECEIVES, MAX_EMPTY_RECEIVES, MAX_WAIT_SECONDS
from lambda_resilience.replay import list_dlq, peek, replay

DLQ = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq"
SOURCE = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"


def _message(n: int, category: str = "transient") -> dict[str, Any]:
    body = {"order_id": f"order-{n}", "payment_attempt": 2, "card_token": "tok_secret", "name": "Ada"}
    return {
        "MessageId": f"m{n}",
        "ReceiptHandle": f"rh{n}",
        "Body": json.dumps(body),
        "Attributes": {"SentTimestamp": "1700000000000"},
        "MessageAttributes": {
            "correlation_id": {"DataType": "String", "StringValue": f"cid-{n}"},
            "dlq_category": {"DataType": "String", "StringValue": category},
        },
    }


class RealSqs:
    """A Stubber-backed SQS client; records every ReceiveMessage's parameters."""

    def __init__(self) -> None:
        self.client = boto3.client("sqs", region_name="us-east-1")
        self.stub = Stubber(self.client)
        self.receives: list[dict[str, Any]] = []
        self.client.meta.events.register("provide-client-params.sqs.ReceiveMessage", self._record)

    def _record(self, params: dict[str, Any], **_: Any) -> None:
        self.receives.append(dict(params))

    def receive(self, *messages: dict[str, Any]) -> None:
        self.stub.add_response("receive_message", {"Messages": list(messages)} if messages else {}, None)

    def counts(self, visible: int, not_visible: int) -> None:
        answer = {
            "ApproximateNumberOfMessages": str(visible),
            "ApproximateNumberOfMessagesNotVisible": str(not_visible),
            "ApproximateNumberOfMessagesDelayed": "0",
        }
        self.stub.add_response("get_queue_attributes", {"Attributes": answer}, {"QueueUrl": DLQ, "AttributeNames": ANY})

    def release(self, *handles: str) -> None:
        entries = [{"Id": str(i), "ReceiptHandle": h, "VisibilityTimeout": 0} for i, h in enumerate(handles)]
        self.stub.add_response(
            "change_message_visibility_batch",
            {"Successful": [{"Id": e["Id"]} for e in entries], "Failed": []},
            {"QueueUrl": DLQ, "Entries": entries},
        )

    def clients(self) -> Callable[[str], Any]:
        return lambda service: self.client


@pytest.fixture
def sqs() -> RealSqs:
    return RealSqs()


def _three_messages_with_a_false_empty_answer(sqs: RealSqs) -> None:
    """Three messages; the second receive answers empty while two are still there (as real SQS may)."""
    sqs.receive(_message(1))
    sqs.receive()  # falsely empty
    sqs.counts(visible=2, not_visible=1)
    sqs.receive(_message(2), _message(3))
    for _ in range(EMPTY_RECEIVES):
        sqs.receive()
        sqs.counts(visible=0, not_visible=3)


def test_list_dlq_counts_every_message_when_sqs_answers_empty_too_early(sqs: RealSqs) -> None:
    _three_messages_with_a_false_empty_answer(sqs)
    sqs.release("rh1", "rh2", "rh3")
    with sqs.stub:
        summary = list_dlq(sqs.clients(), DLQ, None, now=1700000060)
    sqs.stub.assert_no_pending_responses()
    assert summary["transient"]["count"] == 3
    assert all(0 < r["WaitTimeSeconds"] <= MAX_WAIT_SECONDS for r in sqs.receives)


def test_list_dlq_reports_messages_sqs_counts_but_never_returned(sqs: RealSqs) -> None:
    """The queue keeps counting messages no receive returns: the read stops, bounded, and says so."""
    sqs.receive(_message(1))
    for _ in range(MAX_EMPTY_RECEIVES):
        sqs.receive()
        sqs.counts(visible=4, not_visible=1)
    sqs.release("rh1")
    with sqs.stub:
        summary = list_dlq(sqs.clients(), DLQ, None, now=1700000060)
    assert summary["transient"]["count"] == 1
    assert summary["not received"]["count"] == 4
    sqs.stub.assert_no_pending_responses()
    assert len(sqs.receives) == 1 + MAX_EMPTY_RECEIVES


def test_peek_hides_each_message_briefly_and_releases_it(sqs: RealSqs) -> None:
    """A look hides each message for a short visibility timeout and makes it visible again at the end."""
    sqs.receive(_message(1))
    for _ in range(EMPTY_RECEIVES):
        sqs.receive()
        sqs.counts(visible=0, not_visible=1)
    sqs.release("rh1")
    with sqs.stub:
        (message,) = peek(sqs.clients(), DLQ, None)
    sqs.stub.assert_no_pending_responses()
    assert message.correlation_id == "cid-1"
    assert all(r["VisibilityTimeout"] <= 30 for r in sqs.receives)


def test_replay_dry_run_shows_order_attempt_correlation_and_category(sqs: RealSqs) -> None:
    """A dry run says, per message, what a person needs to decide; nothing of the customer is shown."""
    _three_messages_with_a_false_empty_answer(sqs)
    sqs.release("rh1", "rh2", "rh3")
    with sqs.stub:
        report = replay(sqs.clients(), DLQ, SOURCE, None, category="transient", dry_run=True)
    details = report.as_dict()["would_replay_details"]
    assert [d["order_id"] for d in details] == ["order-1", "order-2", "order-3"]
    assert details[0] == {
        "message_id": "m1",
        "order_id": "order-1",
        "attempt": 2,
        "correlation_id": "cid-1",
        "category": "transient",
        "replay_count": 0,
    }
    assert "tok_secret" not in json.dumps(report.as_dict()) and "Ada" not in json.dumps(report.as_dict())
