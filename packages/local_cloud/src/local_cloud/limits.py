"""Every AWS service limit the local run enforces, with its documentation source, in one place.

Numbers checked 2026-11-21 against the pages named next to each one; re-check before relying on
them (several are per-account quotas that AWS raises on request). ``--quota NAME=VALUE``
overrides one (a quota increase); :meth:`Quotas.scaled` divides every rate and concurrency by
the spike's scale factor k (similitude), never the payload limits.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from local_cloud.errors import UsageError

REGION_CLASSES = ("large", "other")
#: The regions with the larger Step Functions quotas ("Step Functions service quotas").
LARGE_REGIONS = ("us-east-1", "us-west-2", "eu-west-1")

KIB = 1024

#: The pages each quota below names, by title.
SOURCES = {
    "Step Functions service quotas": "https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html",
    "Lambda quotas": "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html",
    "Using Lambda with Amazon SQS": "https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html",
    "Amazon SQS message quotas": "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html",
    "Quotas in Amazon DynamoDB": "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html",
}


@dataclass(frozen=True)
class Quotas:
    """Rates are per second, buckets in tokens, concurrency in concurrent executions, sizes in bytes."""

    # -- Step Functions ("Step Functions service quotas": Quotas related to API action throttling)
    #: StartExecution, Standard: bucket 1,300 refilled at 300/s (us-east-1, us-west-2, eu-west-1);
    #: 800 and 150 elsewhere.
    sfn_start_bucket: float = 1300
    sfn_start_refill: float = 300
    # -- ("Step Functions service quotas": Quotas related to state throttling)
    #: StateTransition, Standard: bucket 5,000 refilled at 1,500/s in the large regions; 800 and 500 elsewhere.
    sfn_transition_bucket: float = 5000
    sfn_transition_refill: float = 1500
    #: StartExecution, Express: bucket 6,000 refilled at 6,000/s; Express state transitions are not throttled.
    sfn_express_start_bucket: float = 6000
    sfn_express_start_refill: float = 6000
    # -- Lambda ("Lambda quotas": Concurrent executions)
    #: Account concurrency, per Region (default 1,000; shared by every function without reservation).
    lambda_concurrency: float = 1000
    # -- Lambda + SQS ("Using Lambda with Amazon SQS": Scaling behavior / Configuring maximum concurrency)
    #: The event source mapping starts with 5 concurrent batches (pollers) ...
    esm_initial_concurrency: float = 5
    #: ... adds up to 300 per minute while messages wait ...
    esm_ramp_per_minute: float = 300
    #: ... and stops at 1,000 (MaximumConcurrency, 2..1,000, caps it lower).
    esm_max_concurrency: float = 1000
    # -- payloads (never scaled)
    #: "Step Functions service quotas": input or output of a task, state or execution, 256 KiB (UTF-8).
    sfn_payload_bytes: float = 256 * KIB
    #: "Amazon SQS message quotas": the queue's MaximumMessageSize, 256 KiB when the template sets none
    #: (AWS allows up to 1 MiB per queue since 2025; body plus attributes count).
    sqs_message_bytes: float = 256 * KIB
    #: "Lambda quotas": invocation payload, synchronous, 6 MB request and response.
    lambda_sync_payload_bytes: float = 6 * 1024 * KIB
    #: "Quotas in Amazon DynamoDB": item size, 400 KB (names and values, UTF-8).
    dynamodb_item_bytes: float = 400 * KIB

    @classmethod
    def for_region_class(cls, region_class: str = "large") -> Quotas:
        """The defaults of the large regions (us-east-1, us-west-2, eu-west-1) or of the others."""
        if region_class not in REGION_CLASSES:
            raise UsageError(f"unknown region class {region_class!r}: choose one of {', '.join(REGION_CLASSES)}")
        if region_class == "large":
            return cls()
        return cls(sfn_start_bucket=800, sfn_start_refill=150, sfn_transition_bucket=800, sfn_transition_refill=500)

    def with_overrides(self, overrides: Mapping[str, float]) -> Quotas:
        return dataclasses.replace(self, **dict(overrides)) if overrides else self

    def scaled(self, k: float) -> Quotas:
        """Every rate, bucket and concurrency divided by ``k`` (payload limits unchanged)."""
        if k <= 0:
            raise UsageError(f"scale must be positive, got {k}")
        return dataclasses.replace(
            self, **{f.name: getattr(self, f.name) / k for f in dataclasses.fields(self) if f.name not in PAYLOADS}
        )


PAYLOADS = frozenset({"sfn_payload_bytes", "sqs_message_bytes", "lambda_sync_payload_bytes", "dynamodb_item_bytes"})
QUOTA_NAMES = tuple(f.name for f in dataclasses.fields(Quotas))


def parse_quota(text: str) -> tuple[str, float]:
    """``NAME=VALUE`` (a known quota, a positive finite number) or a :class:`UsageError`."""
    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep:
        raise UsageError(f"--quota {text!r}: expected NAME=VALUE")
    if name not in QUOTA_NAMES:
        raise UsageError(f"--quota {text!r}: unknown quota {name!r} (known: {', '.join(QUOTA_NAMES)})")
    try:
        value = float(raw)
    except ValueError:
        raise UsageError(f"--quota {text!r}: {raw!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"--quota {text!r}: the value must be a positive number")
    return name, value


def parse_quotas(texts: Iterable[str] | None) -> dict[str, float]:
    return dict(parse_quota(t) for t in texts or ())


class TokenBucket:
    """AWS's token bucket on a clock: ``capacity`` tokens, ``refill`` per second; a call takes one."""

    def __init__(self, capacity: float, refill: float, now: Callable[[], float]) -> None:
        self.capacity = capacity
        self.refill = refill
        self._now = now
        self._tokens = capacity
        self._at = now()
        self._lock = threading.Lock()

    def _update(self) -> None:
        now = self._now()
        if now > self._at:
            self._tokens = min(self.capacity, self._tokens + (now - self._at) * self.refill)
        self._at = max(self._at, now)

    def take(self, n: float = 1.0) -> bool:
        """Take ``n`` tokens if there are that many (True), else take none (False)."""
        with self._lock:
            self._update()
            if self._tokens >= n:
                self._tokens -= n
                return True
            return False

    @property
    def tokens(self) -> float:
        with self._lock:
            self._update()
            return self._tokens


def esm_concurrency(quotas: Quotas, seconds_scaling: float, maximum_concurrency: float | None = None) -> float:
    """The SQS event source mapping's concurrent batches after ``seconds_scaling`` of waiting messages:
    the initial pollers plus the per-minute ramp, capped at the maximum and at ``MaximumConcurrency``."""
    ramped = quotas.esm_initial_concurrency + quotas.esm_ramp_per_minute * max(0.0, seconds_scaling) / 60.0
    cap = (
        quotas.esm_max_concurrency
        if maximum_concurrency is None
        else min(quotas.esm_max_concurrency, maximum_concurrency)
    )
    return min(ramped, cap)


def payload_size(value: Any) -> int:
    """UTF-8 size of a string (or bytes length)."""
    if isinstance(value, bytes | bytearray):
        return len(value)
    return len(str(value).encode("utf-8"))
