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
from lambda_resilience.receive import DEFAULT_WAIT_SECONDS, ReadEnd, receive_each

__all__ = ["MAX_AUTOMATIC_REPLAYS", "DlqMessage", "ReplayReport", "hold", "list_dlq", "peek", "replay", "summarize"]


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


#: How long a look (``list_dlq``, :func:`peek`) hides each message: the read's few receives last well under
#: this, and every message is made visible again when the look ends (a crashed look: after this at most).
LOOK_VISIBILITY_SECONDS = 20
#: The pseudo-category of :func:`list_dlq` for messages the queue counts but no receive returned.
NOT_RECEIVED = "not received"


def _receive_batches(
    client: Callable[[str], Any],
    dlq_url: str,
    failures_table: str | None,
    visibility_timeout: int,
    wait_seconds: int = DEFAULT_WAIT_SECONDS,
    end: ReadEnd | None = None,
) -> Iterator[list[DlqMessage]]:
    """Receive each message of the DLQ once, a batch at a time (hidden for ``visibility_timeout``), long
    polling until the queue is read to its end (:func:`lambda_resilience.receive.receive_each`)."""
    batches = receive_each(
        client("sqs"), dlq_url, visibility_timeout=visibility_timeout, wait_seconds=wait_seconds, end=end
    )
    for batch in batches:
        yield [_parse(m, client, failures_table) for m in batch]


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
    client: Callable[[str], Any],
    dlq_url: str,
    failures_table: str | None,
    now: float | None = None,
    *,
    wait_seconds: int = DEFAULT_WAIT_SECONDS,
) -> dict[str, dict[str, Any]]:
    """``{category: {"count", "oldest_age_seconds"}}`` for one DLQ; messages are left in place, each hidden
    for the look only. Messages the queue still counts but no receive returned: :data:`NOT_RECEIVED`."""
    now = time.time() if now is None else now
    summary: dict[str, dict[str, Any]] = {}
    end = ReadEnd()
    for message in peek(client, dlq_url, failures_table, wait_seconds=wait_seconds, end=end):
        entry = summary.setdefault(message.category, {"count": 0, "oldest_age_seconds": 0})
        entry["count"] += 1
        entry["oldest_age_seconds"] = max(entry["oldest_age_seconds"], round(now - message.sent_timestamp))
    if not end.complete and end.not_received:
        summary[NOT_RECEIVED] = {"count": end.not_received, "oldest_age_seconds": None}
    return summary


def peek(
    client: Callable[[str], Any],
    dlq_url: str,
    failures_table: str | None,
    *,
    wait_seconds: int = DEFAULT_WAIT_SECONDS,
    end: ReadEnd | None = None,
) -> list[DlqMessage]:
    """Every message of the DLQ with its category; each is hidden for the look only (at most
    :data:`LOOK_VISIBILITY_SECONDS`) and made visible again before returning, whatever happens."""
    held: list[DlqMessage] = []
    try:
        for batch in _receive_batches(client, dlq_url, failures_table, LOOK_VISIBILITY_SECONDS, wait_seconds, end):
            held.extend(batch)
    finally:
        _release(client, dlq_url, held)
    return held


def hold(
    client: Callable[[str], Any],
    dlq_url: str,
    failures_table: str | None,
    message_id: str,
    *,
    wait_seconds: int = DEFAULT_WAIT_SECONDS,
) -> DlqMessage | None:
    """The DLQ's message ``message_id``, received and held (hidden for :data:`LOOK_VISIBILITY_SECONDS`, its
    receipt handle current: the caller deletes it or lets it come back), or None when a read to the queue's end
    did not find it. Every other message received on the way is made visible again at once."""
    others: list[DlqMessage] = []
    try:
        for batch in _receive_batches(client, dlq_url, failures_table, LOOK_VISIBILITY_SECONDS, wait_seconds):
            found = next((m for m in batch if m.message_id == message_id), None)
            others.extend(m for m in batch if m is not found)
            if found is not None:
                return found
    finally:
        _release(client, dlq_url, others)
    return None


def describe(message: DlqMessage) -> dict[str, Any]:
    """What a person needs to decide on a message: its order, attempt, correlation ID and category, read
    from the body's ``order_id`` and ``payment_attempt`` only (never the customer's data)."""
    try:
        body = json.loads(message.body)
    except (ValueError, RecursionError):
        body = None
    body = body if isinstance(body, dict) else {}
    order_id, attempt = body.get("order_id"), body.get("payment_attempt", body.get("attempt"))
    return {
        "message_id": message.message_id,
        "order_id": order_id if isinstance(order_id, str) else None,
        "attempt": attempt if isinstance(attempt, int) and not isinstance(attempt, bool) else None,
        "correlation_id": message.correlation_id,
        "category": message.category,
        "replay_count": message.replay_count,
    }


@dataclass
class ReplayReport:
    replayed: list[str] = field(default_factory=list)
    would_replay: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    #: :func:`describe` of each message replayed (or, in a dry run, that would be).
    details: list[dict[str, Any]] = field(default_factory=list)
    #: How the read of the DLQ ended (complete, or what the queue still counted).
    read: ReadEnd = field(default_factory=ReadEnd)

    def as_dict(self) -> dict[str, Any]:
        dry = bool(self.would_replay)
        return {
            "replayed": self.replayed,
            "would_replay": self.would_replay,
            "skipped": self.skipped,
            "would_replay_details" if dry else "replayed_details": self.details,
            "read_complete": self.read.complete,
            "not_received": 0 if self.read.complete else self.read.not_received,
        }


def _skip_reason(
    message: DlqMessage, report: ReplayReport, category: str | None, *, force: bool, max_messages: int | None,
    max_replays: int | None,
) -> str | None:  # fmt: skip
    """Why ``message`` is not replayed, or None."""
    if max_messages is not None and len(report.replayed) + len(report.would_replay) >= max_messages:
        return "over --max"
    if category is not None and message.category != category:
        return f"category {message.category}"
    if message.category == PERMANENT and not force:
        return "permanent (use --force)"
    if max_replays is not None and message.replay_count >= max_replays:
        return f"replayed {message.replay_count} times already"
    if max_replays is not None and resend_attributes(message) is None:
        return "10 attributes of its own: no room to count replays (replay by hand)"
    return None


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
    wait_seconds: int = DEFAULT_WAIT_SECONDS,
) -> ReplayReport:
    """Move chosen DLQ messages back to their source queue, body and correlation ID intact.

    A message leaves the DLQ only after its re-send succeeded: if this dies midway, every
    message is either back in the source queue or still in the DLQ (hidden for at most
    ``visibility_timeout`` seconds). Permanent failures are replayed only with ``force``.
    Replaying an already-processed message is harmless: the consumer is idempotent. The DLQ is read
    to its end with long polling (``wait_seconds``) and its counts (``report.read``).
    """
    report = ReplayReport()
    held: list[DlqMessage] = []
    try:
        batches = _receive_batches(client, dlq_url, failures_table, visibility_timeout, wait_seconds, report.read)
        for batch in batches:
            held.extend(batch)  # a whole batch is held before any is handled: all can be put back
            for message in batch:
                reason = _skip_reason(
                    message, report, category, force=force, max_messages=max_messages, max_replays=max_replays
                )
                if reason is not None:
                    report.skipped[message.message_id] = reason
                    continue
                report.details.append(describe(message))
                if dry_run:
                    report.would_replay.append(message.message_id)
                    continue
                _resend(client, dlq_url, source_url, message)
                held.remove(message)
                report.replayed.append(message.message_id)
                if rate_per_second:
                    time.sleep(1.0 / rate_per_second)
    finally:
        _release(client, dlq_url, held)
    return report


def _resend(client: Callable[[str], Any], dlq_url: str, source_url: str, message: DlqMessage) -> None:
    """Send ``message`` to its source queue (``replay_count`` counted up when there is room), then delete it."""
    attributes = resend_attributes(message)
    if attributes is None:  # an operator's replay: the message as it was, uncounted
        attributes = {k: v for k, v in message.raw_attributes.items() if k not in DLQ_ATTRIBUTES}
    client("sqs").send_message(QueueUrl=source_url, MessageBody=message.body, MessageAttributes=attributes)
    client("sqs").delete_message(QueueUrl=dlq_url, ReceiptHandle=message.receipt_handle)


def summarize(report: ReplayReport) -> str:
    return json.dumps(report.as_dict())
