"""Back off a throttled SQS record without burning its receive count.

A record failed by a throttle (StartExecution's token bucket, Lambda concurrency, DynamoDB
capacity) comes back after the visibility timeout, and after ``maxReceiveCount`` receives the
redrive policy moves it to the DLQ: a traffic spike would dead-letter valid messages. Instead the
record is sent again to its own queue with a delay (exponential, jittered) and a
``throttle_requeues`` attribute, and the original is acknowledged. The copy is a new message
(receive count 1); the consumer must be idempotent, so a copy sent twice (a crash between the
send and the acknowledgement) does nothing twice. After ``max_requeues`` the record fails as
before (its receive count, then the DLQ as ``transient``, replayable).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from lambda_resilience.aws import error_code

#: AWS error codes that say "too fast" (a quota), not "broken".
THROTTLE_CODES = frozenset(
    {
        "ThrottlingException",
        "Throttling",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "ProvisionedThroughputExceededException",
        "RequestThrottled",
    }
)
REQUEUE_ATTRIBUTE = "throttle_requeues"
#: SQS's largest DelaySeconds.
MAX_DELAY_SECONDS = 900


def is_throttle(exc: BaseException) -> bool:
    return error_code(exc) in THROTTLE_CODES if isinstance(exc, Exception) else False


def _sqs_attributes(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The record's message attributes (Lambda's event shape) in SendMessage's shape."""
    out: dict[str, dict[str, Any]] = {}
    for name, attr in (record.get("messageAttributes") or {}).items():
        data_type = attr.get("dataType", "String")
        if attr.get("stringValue") is not None:
            out[name] = {"DataType": data_type, "StringValue": attr["stringValue"]}
        elif attr.get("binaryValue") is not None:
            out[name] = {"DataType": data_type, "BinaryValue": attr["binaryValue"]}
    return out


def requeues_of(record: dict[str, Any]) -> int:
    raw = ((record.get("messageAttributes") or {}).get(REQUEUE_ATTRIBUTE) or {}).get("stringValue")
    try:
        return max(0, int(raw)) if raw is not None else 0
    except ValueError:
        return 0


class ThrottleBackoff:
    """Requeue throttled records of ``queue_url`` with a delay of ``base * 2^n`` (capped, equal jitter).

    Args:
        queue_url: the queue the records came from (they are sent back to it).
        client: ``client(service)`` returns a boto3 client.
        base_seconds, max_seconds: the first delay and the largest (SQS allows at most 900 s).
        max_requeues: after this many requeues a throttled record fails as before.
        rng: the jitter's random source.
    """

    __slots__ = ("base_seconds", "client", "max_requeues", "max_seconds", "queue_url", "rng")

    def __init__(
        self,
        queue_url: str,
        client: Callable[[str], Any],
        base_seconds: int = 5,
        max_seconds: int = 60,
        max_requeues: int = 100,
        rng: random.Random | None = None,
    ) -> None:
        self.queue_url = queue_url
        self.client = client
        self.base_seconds = base_seconds
        self.max_seconds = max_seconds
        self.max_requeues = max_requeues
        self.rng = rng or random.Random()

    def delay(self, requeues: int) -> int:
        ceiling = min(self.max_seconds, MAX_DELAY_SECONDS, self.base_seconds * 2 ** min(requeues, 10))
        return int(self.rng.uniform(ceiling / 2, ceiling))

    def requeue(self, record: dict[str, Any], exc: BaseException) -> int | None:
        """Send ``record`` again with a delay if ``exc`` is a throttle; the delay, or None (not requeued)."""
        if not is_throttle(exc):
            return None
        n = requeues_of(record)
        if n >= self.max_requeues:
            return None
        delay = self.delay(n)
        attributes = _sqs_attributes(record)
        attributes[REQUEUE_ATTRIBUTE] = {"DataType": "Number", "StringValue": str(n + 1)}
        self.client("sqs").send_message(
            QueueUrl=self.queue_url, MessageBody=record["body"], MessageAttributes=attributes, DelaySeconds=delay
        )
        return delay
