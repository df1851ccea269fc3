"""Read DLQs by failure category and replay chosen messages to their source queue.

A message leaves the DLQ only after its re-send succeeded; its body and correlation ID are kept
and its ``replay_count`` attribute counted up. Replaying is safe because consumers are idempotent.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from lambda_resilience.classification import PERMANENT, TRANSIENT
from lambda_resilience.correlation import CORRELATION_ID
from lambda_resilience.dlq import (
    CATEGORY,
    DLQ_ATTRIBUTES,
    ERROR_MESSAGE,
    ERROR_TYPE,
    MAX_AUTOMATIC_REPLAYS,
    REPLAY_COUNT,
    UNCLASSIFIED,
    string_attribute,
)

__all__ = ["MAX_AUTOMATIC_REPLAYS", "DlqMessage", "ReplayReport", "list_dlq", "peek", "replay", "summarize"]


@dataclass
class DlqMessage:
    """A message in a DLQ, with its category resolved."""

    message_id: str
    receipt_handle: str
    body: str
    attributes: dict[str, str]
    sent_timestamp: float
    category: str
    error_type: str | None = None
    error_message: str | None = None
    #: The message attributes as SQS returned them (String, Number, Binary and custom types), re-sent as they are.
    raw_attributes: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def correlation_id(self) -> str | None:
        return self.attributes.get(CORRELATION_ID)

    @property
    def replay_count(self) -> int:
        return int(self.attributes.get(REPLAY_COUNT, "0"))


def _failure_record(client: Callable[[str], Any], table: str | None, message_id: str) -> dict[str, str]:
    if not table:
        return {}
    item = client("dynamodb").get_item(TableName=table, Key={"message_id": {"S": message_id}}).get("Item", {})
    return {k: next(iter(v.values())) for k, v in item.items()}


#: SQS's limit of message attributes per message
#: (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html).
MAX_MESSAGE_ATTRIBUTES = 10
#: The fields of a received attribute that SendMessage takes back.
_ATTRIBUTE_FIELDS = ("DataType", "StringValue", "BinaryValue")


def _resendable(value: dict[str, Any]) -> dict[str, Any]:
    return {k: value[k] for k in _ATTRIBUTE_FIELDS if k in value}


def _parse(message: dict[str, Any], client: Callable[[str], Any], failures_table: str | None) -> DlqMessage:
    raw = {k: _resendable(v) for k, v in (message.get("MessageAttributes") or {}).items()}
    # Readable values of the string-typed attributes only (a binary attribute is never decoded).
    attributes = {k: str(v["StringValue"]) for k, v in raw.items() if "StringValue" in v}
    category = attributes.get(CATEGORY)
    error_type, error_message = attributes.get(ERROR_TYPE), attributes.get(ERROR_MESSAGE)
    if not category:  # redriven by SQS: look the failure up by message ID
        record = _failure_record(client, failures_table, message["MessageId"])
        category = record.get("category", UNCLASSIFIED)
        error_type, error_message = record.get("error_type"), record.get("error_message")
        if record.get("correlation_id") and CORRELATION_ID not in attributes:
            attributes[CORRELATION_ID] = record["correlation_id"]
            raw[CORRELATION_ID] = string_attribute(record["correlation_id"])
    sent = float((message.get("Attributes") or {}).get("SentTimestamp", time.time() * 1000)) / 1000
    return DlqMessage(
        message_id=message["MessageId"],
        receipt_handle=message["ReceiptHandle"],
        body=message.get("Body", ""),
        attributes=attributes,
        sent_timestamp=sent,
        category=category,
        error_type=error_type,
        error_message=error_message,
        raw_attributes=raw,
    )


def resend_attributes(message: DlqMessage) -> dict[str, dict[str, Any]] | None:
    """The attributes to re-send: the message's own (every type SQS allows, binary included) without
    the DLQ's ``dlq_*``, and ``replay_count`` counted up when SQS's limit of 10 leaves room; None
    when it does not (the message carries 10 of its own: an automatic replay could not count it)."""
    kept = {k: v for k, v in message.raw_attributes.items() if k not in DLQ_ATTRIBUTES and k != REPLAY_COUNT}
    if len(kept) >= MAX_MESSAGE_ATTRIBUTES:
        return None
    return {**kept, REPLAY_COUNT: string_attribute(message.replay_count + 1)}


def _receive_batches(
    client: Callable[[str], Any], dlq_url: str, failures_table: str | None, visibility_timeout: int
) -> Iterator[list[DlqMessage]]:
    """Receive each message of the DLQ once, a batch at a time (hidden for ``visibility_timeout``)."""
    seen: set[str] = set()
    while True:
        messages = (
            client("sqs")
            .receive_message(
                QueueUrl=dlq_url,
                MaxNumberOfMessages=10,
                VisibilityTimeout=visibility_timeout,
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
                WaitTimeSeconds=0,
            )
            .get("Messages", [])
        )
        fresh = [m for m in messages if m["MessageId"] not in seen]
        if not fresh:
            return
        seen.update(m["MessageId"] for m in fresh)
        yield [_parse(m, client, failures_table) for m in fresh]


def _receive_all(
    client: Callable[[str], Any], dlq_url: str, failures_table: str | None, visibility_timeout: int
) -> Iterator[DlqMessage]:
    for batch in _receive_batches(client, dlq_url, failures_table, visibility_timeout):
        yield from batch


def _release(client: Callable[[str], Any], dlq_url: str, messages: list[DlqMessage]) -> None:
    """Make held messages visible again, ten per call.

    A release that fails (the handle expired or the message was deleted meanwhile) is harmless:
    the message becomes visible when its visibility timeout ends.
    """
    sqs = client("sqs")
    for start in range(0, len(messages), 10):
        chunk = messages[start : start + 10]
        sqs.change_message_visibility_batch(
            QueueUrl=dlq_url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m.receipt_handle, "VisibilityTimeout": 0} for i, m in enumerate(chunk)
            ],
        )


def list_dlq(
    client: Callable[[str], Any], dlq_url: str, failures_table: str | None, now: float | None = None
) -> dict[str, dict[str, Any]]:
    """``{category: {"count", "oldest_age_seconds"}}`` for one DLQ; messages are left in place."""
    now = time.time() if now is None else now
    summary: dict[str, dict[str, Any]] = {}
    held: list[DlqMessage] = []
    try:
        for message in _receive_all(client, dlq_url, failures_table, visibility_timeout=30):
            held.append(message)
            entry = summary.setdefault(message.category, {"count": 0, "oldest_age_seconds": 0})
            entry["count"] += 1
            entry["oldest_age_seconds"] = max(entry["oldest_age_seconds"], round(now - message.sent_timestamp))
    finally:
        _release(client, dlq_url, held)
    return summary


def peek(client: Callable[[str], Any], dlq_url: str, failures_table: str | None) -> list[DlqMessage]:
    """Every message of the DLQ with its category; all are made visible again before returning."""
    held = list(_receive_all(client, dlq_url, failures_table, visibility_timeout=30))
    _release(client, dlq_url, held)
    return held


def _messages_held(
    client: Callable[[str], Any],
    dlq_url: str,
    failures_table: str | None,
    visibility_timeout: int,
    held: list[DlqMessage],
) -> Iterator[DlqMessage]:
    """Yield messages one by one; a whole received batch is in ``held`` before any is handled,
    so whatever stops the caller, every received-but-unfinished message can be put back."""
    for batch in _receive_batches(client, dlq_url, failures_table, visibility_timeout):
        held.extend(batch)
        yield from batch


@dataclass
class ReplayReport:
    replayed: list[str] = field(default_factory=list)
    would_replay: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"replayed": self.replayed, "would_replay": self.would_replay, "skipped": self.skipped}


def replay(
    client: Callable[[str], Any],
    dlq_url: str,
    source_url: str,
    failures_table: str | None,
    *,
    category: str | None = TRANSIENT,
    dry_run: bool = False,
    max_messages: int | None = None,
    rate_per_second: float | None = None,
    force: bool = False,
    max_replays: int | None = None,
    visibility_timeout: int = 60,
) -> ReplayReport:
    """Move chosen DLQ messages back to their source queue, body and correlation ID intact.

    A message leaves the DLQ only after its re-send succeeded: if this dies midway, every
    message is either back in the source queue or still in the DLQ (hidden for at most
    ``visibility_timeout`` seconds). Permanent failures are replayed only with ``force``.
    Replaying an already-processed message is harmless: the consumer is idempotent.
    """
    report = ReplayReport()
    held: list[DlqMessage] = []
    try:
        for message in _messages_held(client, dlq_url, failures_table, visibility_timeout, held):
            if max_messages is not None and len(report.replayed) + len(report.would_replay) >= max_messages:
                report.skipped[message.message_id] = "over --max"
            elif category is not None and message.category != category:
                report.skipped[message.message_id] = f"category {message.category}"
            elif message.category == PERMANENT and not force:
                report.skipped[message.message_id] = "permanent (use --force)"
            elif max_replays is not None and message.replay_count >= max_replays:
                report.skipped[message.message_id] = f"replayed {message.replay_count} times already"
            elif (attributes := resend_attributes(message)) is None and max_replays is not None:
                report.skipped[message.message_id] = (
                    "10 attributes of its own: no room to count replays (replay by hand)"
                )
            elif dry_run:
                report.would_replay.append(message.message_id)
            else:
                if attributes is None:  # an operator's replay: the message as it was, uncounted
                    attributes = {k: v for k, v in message.raw_attributes.items() if k not in DLQ_ATTRIBUTES}
                client("sqs").send_message(QueueUrl=source_url, MessageBody=message.body, MessageAttributes=attributes)
                client("sqs").delete_message(QueueUrl=dlq_url, ReceiptHandle=message.receipt_handle)
                held.remove(message)
                report.replayed.append(message.message_id)
                if rate_per_second:
                    time.sleep(1.0 / rate_per_second)
    finally:
        _release(client, dlq_url, held)
    return report


def summarize(report: ReplayReport) -> str:
    return json.dumps(report.as_dict())
