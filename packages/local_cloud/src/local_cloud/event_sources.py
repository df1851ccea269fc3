"""An emulated SQS event source mapping (Lambda's poller), driven by the simulated clock.

Why hand-written: moto stores event source mappings but does not poll. This follows Lambda's
documented SQS behaviour: receive up to BatchSize messages, invoke once per batch, delete the
successful ones, and leave failed ones invisible for the queue's visibility timeout; SQS itself
(moto) moves a message to the DLQ once its receive count passes maxReceiveCount.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import boto3

from local_cloud.clients import moto_in_process
from local_cloud.clock import SimClock
from local_cloud.lambda_runtime import LocalFunction
from local_cloud.template import ACCOUNT, REGION

#: SQS's maximum visibility timeout (12 h), used as the wall-clock one while we simulate time.
WALL_CLOCK_VISIBILITY_SECONDS = 43200


@dataclass
class EventSourceSpec:
    """One ``AWS::Lambda::EventSourceMapping`` from an SQS queue, as deployed."""

    queue_url: str
    queue_arn: str
    function: LocalFunction
    batch_size: int
    report_batch_item_failures: bool
    visibility_timeout: int
    max_concurrency: int | None


@dataclass
class PollStats:
    batches: int = 0
    records: int = 0
    failed_records: int = 0
    deleted: int = 0


@dataclass
class SqsPoller:
    spec: EventSourceSpec
    clock: SimClock
    stats: PollStats = field(default_factory=PollStats)
    #: Correlation ID -> receives of it that ended in an invocation error (a crash fails the
    #: whole batch whatever each record's content: the records behind it come back unprocessed).
    interrupted: Counter[str] = field(default_factory=Counter)
    _hidden: list[tuple[float, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._sqs = boto3.client("sqs", region_name=REGION)

    @staticmethod
    def _record(message: dict[str, Any], queue_arn: str) -> dict[str, Any]:
        attrs = {
            k: {
                "stringValue": v.get("StringValue"),
                "binaryValue": v.get("BinaryValue"),
                "stringListValues": [],
                "binaryListValues": [],
                "dataType": v["DataType"],
            }
            for k, v in (message.get("MessageAttributes") or {}).items()
        }
        return {
            "messageId": message["MessageId"],
            "receiptHandle": message["ReceiptHandle"],
            "body": message["Body"],
            "attributes": message.get("Attributes", {}),
            "messageAttributes": attrs,
            "md5OfBody": message.get("MD5OfBody"),
            "eventSource": "aws:sqs",
            "eventSourceARN": queue_arn,
            "awsRegion": REGION,
        }

    def poll_once(self) -> int:
        """Receive one batch and invoke the function; returns the number of records delivered."""
        response = self._sqs.receive_message(
            QueueUrl=self.spec.queue_url,
            MaxNumberOfMessages=min(self.spec.batch_size, 10),
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
            WaitTimeSeconds=0,
            # The queue's visibility timeout runs on the simulated clock (release_due); moto's
            # own, in wall time, must never fire first, or a failed message would reappear twice.
            VisibilityTimeout=WALL_CLOCK_VISIBILITY_SECONDS,
        )
        messages = response.get("Messages", [])
        if not messages:
            return 0
        event = {"Records": [self._record(m, self.spec.queue_arn) for m in messages]}
        result, errored = self.spec.function.invoke(event)
        ids = {m["MessageId"] for m in messages}
        if errored:
            failed = ids  # an invocation error fails the whole batch
            for m in messages:
                cid = (m.get("MessageAttributes") or {}).get("correlation_id", {}).get("StringValue")
                self.interrupted[cid or m["MessageId"]] += 1
        elif self.spec.report_batch_item_failures:
            reported = {f.get("itemIdentifier") for f in (json.loads(result) or {}).get("batchItemFailures", [])}
            # Lambda treats an empty or unknown identifier as a failure of the whole batch.
            failed = ids if (reported - ids) else reported & ids
        else:
            failed = set()
        self.stats.batches += 1
        self.stats.records += len(messages)
        self.stats.failed_records += len(failed)
        done = [m for m in messages if m["MessageId"] not in failed]
        for start in range(0, len(done), 10):
            chunk = done[start : start + 10]
            self._sqs.delete_message_batch(
                QueueUrl=self.spec.queue_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)],
            )
            self.stats.deleted += len(chunk)
        visible_at = self.clock.now() + self.spec.visibility_timeout
        self._hidden.extend((visible_at, m["ReceiptHandle"]) for m in messages if m["MessageId"] in failed)
        return len(messages)

    def next_visible_at(self) -> float | None:
        return min((t for t, _ in self._hidden), default=None)

    def next_delayed_at(self) -> float | None:
        """When the earliest message sent with DelaySeconds becomes deliverable (simulated time), if
        any: a throttled record requeued with a delay (lambda_resilience.backoff). SQS's API shows
        only how many are delayed, not until when, so this reads moto's in-process queue (the
        ``sqs_delay_read`` registry row); None through a moto server, and the loop steps instead."""
        if not moto_in_process():
            return None
        from moto.sqs.models import sqs_backends

        queue = sqs_backends[ACCOUNT][REGION].queues.get(self.spec.queue_url.rsplit("/", 1)[-1])
        if queue is None:
            return None
        now_ms = self.clock.now() * 1000.0
        due = [m.delayed_until for m in list(queue._messages) if m.delayed_until > now_ms]
        return min(due) / 1000.0 if due else None

    def release_due(self) -> int:
        """Make failed messages whose (simulated) visibility timeout has passed visible again."""
        now = self.clock.now()
        due = [h for h in self._hidden if h[0] <= now]
        self._hidden = [h for h in self._hidden if h[0] > now]
        released = 0
        for _, handle in due:
            try:
                self._sqs.change_message_visibility(
                    QueueUrl=self.spec.queue_url, ReceiptHandle=handle, VisibilityTimeout=0
                )
                released += 1
            except self._sqs.exceptions.ReceiptHandleIsInvalid:
                continue  # already gone (deleted or moved to the DLQ): nothing to release
        return released

    def queue_depth(self) -> int:
        """Visible, in flight and delayed (a throttled record requeued with DelaySeconds is still an order)."""
        attrs = self._sqs.get_queue_attributes(
            QueueUrl=self.spec.queue_url,
            AttributeNames=[
                "ApproximateNumberOfMessages",
                "ApproximateNumberOfMessagesNotVisible",
                "ApproximateNumberOfMessagesDelayed",
            ],
        )["Attributes"]
        return sum(
            int(attrs.get(name, 0))
            for name in (
                "ApproximateNumberOfMessages",
                "ApproximateNumberOfMessagesNotVisible",
                "ApproximateNumberOfMessagesDelayed",
            )
        )


def queue_name_from_url(url: str) -> str:
    return url.rsplit("/", 1)[-1]


__all__ = ["ACCOUNT", "EventSourceSpec", "PollStats", "SqsPoller", "queue_name_from_url"]
