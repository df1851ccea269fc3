"""Dead-letter discipline: classify every failure, route poison messages to the DLQ at once,
remember why transient failures failed, and replay by category without losing a message.

Why hand-written: SQS redrive carries no error information and Powertools' batch utility
reports failures but does not classify or dead-letter them; no maintained library does
category-aware DLQ routing and replay.

- A **permanent** failure (malformed payload, schema violation, payload mismatch) is sent to
  the DLQ on its first receive, with the failure as message attributes, and then reported
  as processed, so it does not burn ``maxReceiveCount`` attempts. If that send fails, the
  record is reported failed instead: it stays in the source queue, never lost.
- A **transient** or **unknown** failure is recorded in the failures table under the SQS
  message ID (which SQS keeps when redriving) and the record is reported failed: the redrive
  policy retries it, and after ``maxReceiveCount`` receives SQS moves it to the DLQ, where its
  category is read back from the failures table.
- :mod:`lambda_resilience.replay` reads a DLQ's category from the message attributes or, for
  redriven messages, from the failures table, and replays by category.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from lambda_resilience.classification import PERMANENT, classify
from lambda_resilience.correlation import CORRELATION_ID
from lambda_resilience.tracing import TRACEPARENT

CATEGORY = "dlq_category"
ERROR_TYPE = "dlq_error_type"
ERROR_MESSAGE = "dlq_error_message"
SOURCE_QUEUE = "dlq_source_queue"
FIRST_FAILURE = "dlq_first_failure_time"
RECEIVE_COUNT = "dlq_receive_count"
REPLAY_COUNT = "replay_count"
DLQ_ATTRIBUTES = (CATEGORY, ERROR_TYPE, ERROR_MESSAGE, SOURCE_QUEUE, FIRST_FAILURE, RECEIVE_COUNT)
#: The original message's attributes a DLQ copy keeps (with its correlation ID), so that a replay
#: continues the same trace and keeps the API's idempotency key. With the 6 ``dlq_*`` attributes,
#: the correlation ID and ``replay_count``, a copy carries at most 10 message attributes: SQS's
#: limit (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html).
KEPT_ATTRIBUTES = (TRACEPARENT, "idempotency_key")
MAX_DLQ_COPY_ATTRIBUTES = 10
MAX_ERROR_MESSAGE = 256
#: How long failure records are kept: the DLQ's retention (14 days) plus a day.
FAILURE_RECORD_TTL_SECONDS = 15 * 24 * 3600
#: A message replayed this many times is not replayed automatically again (a human looks).
MAX_AUTOMATIC_REPLAYS = 3
UNCLASSIFIED = "unclassified"


def string_attribute(value: Any) -> dict[str, str]:
    """An SQS ``String`` message attribute (SendMessage's shape)."""
    return {"DataType": "String", "StringValue": str(value)}


def _iso(epoch_seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch_seconds))


class FailureRouting:
    """Where failures of one consumer go: its DLQ and the failures table.

    Args:
        dlq_url: the consumer's DLQ; None: nothing is dead-lettered at once.
        failures_table: where transient and unknown failures are recorded; None: not recorded.
        client: ``client(service)`` returns a boto3 client (e.g. :func:`lambda_resilience.aws.client`).
    """

    __slots__ = ("client", "dlq_url", "failures_table")

    def __init__(self, dlq_url: str | None, failures_table: str | None, client: Callable[[str], Any]) -> None:
        self.dlq_url = dlq_url
        self.failures_table = failures_table
        self.client = client

    def handle(self, record: dict[str, Any], exc: BaseException, correlation_id: str) -> bool:
        """Route a failed record; True if it was dead-lettered now (report it as processed).

        If the DLQ send fails, the failure is remembered instead and the record stays in its
        queue (the redrive policy moves it later, its category recorded): never lost.
        """
        category = classify(exc)
        if category == PERMANENT and self.dlq_url:
            try:
                self.dead_letter(record, exc, correlation_id)
                return True
            except Exception:
                self.remember(record, exc, correlation_id, category)
                raise
        self.remember(record, exc, correlation_id, category)
        return False

    def dead_letter(self, record: dict[str, Any], exc: BaseException, correlation_id: str) -> str:
        attrs = record.get("attributes") or {}
        first_receive_ms = attrs.get("ApproximateFirstReceiveTimestamp")
        first = _iso(int(first_receive_ms) / 1000) if first_receive_ms else _iso(time.time())
        message_attributes = {
            CORRELATION_ID: string_attribute(correlation_id),
            CATEGORY: string_attribute(classify(exc)),
            ERROR_TYPE: string_attribute(type(exc).__name__),
            ERROR_MESSAGE: string_attribute((str(exc) or type(exc).__name__)[:MAX_ERROR_MESSAGE]),
            SOURCE_QUEUE: string_attribute(record.get("eventSourceARN", "unknown")),
            FIRST_FAILURE: string_attribute(first),
            RECEIVE_COUNT: string_attribute(attrs.get("ApproximateReceiveCount", "1")),
        }
        original = record.get("messageAttributes") or {}
        for name in KEPT_ATTRIBUTES:
            value = (original.get(name) or {}).get("stringValue")
            if value:
                message_attributes[name] = string_attribute(value)
        replays = original.get(REPLAY_COUNT, {}).get("stringValue")
        if replays:
            message_attributes[REPLAY_COUNT] = string_attribute(replays)
        response = self.client("sqs").send_message(
            QueueUrl=self.dlq_url, MessageBody=record.get("body") or "", MessageAttributes=message_attributes
        )
        return str(response["MessageId"])

    def remember(self, record: dict[str, Any], exc: BaseException, correlation_id: str, category: str) -> None:
        """Record the failure under the message ID (best effort: never masks the real error)."""
        if not self.failures_table:
            return
        now = time.time()
        attrs = record.get("attributes") or {}
        try:
            self.client("dynamodb").update_item(
                TableName=self.failures_table,
                Key={"message_id": {"S": record["messageId"]}},
                UpdateExpression=(
                    "SET category = :c, error_type = :t, error_message = :m, source_queue = :q, "
                    "correlation_id = :cid, receive_count = :r, last_failure_time = :now, expires_at = :exp, "
                    "first_failure_time = if_not_exists(first_failure_time, :now)"
                ),
                ExpressionAttributeValues={
                    ":c": {"S": category},
                    ":t": {"S": type(exc).__name__},
                    ":m": {"S": (str(exc) or type(exc).__name__)[:MAX_ERROR_MESSAGE]},
                    ":q": {"S": record.get("eventSourceARN", "unknown")},
                    ":cid": {"S": correlation_id},
                    ":r": {"N": str(attrs.get("ApproximateReceiveCount", "1"))},
                    ":now": {"S": _iso(now)},
                    ":exp": {"N": str(int(now) + FAILURE_RECORD_TTL_SECONDS)},
                },
            )
        except Exception:
            return
