"""What the order API is throttled at: the rate the pipeline behind it sustains, from AWS's default quotas.

The product owns the few quotas it sizes itself by (:class:`ServiceQuotas`, each citing its AWS page);
the local emulator has its own, larger table (``local_cloud.limits.Quotas``) and a harness test checks
that the two agree. ``ops capacity`` runs the same model (:func:`queue_ceilings`, :func:`queue_service`,
:func:`api_throttle`) with the emulator's table, so that overrides (``--quota``) and the spike's
scaling apply to it.

The model: the orders queue is served at ``mu`` orders a second, the smallest of the StartExecution
refill and the event source mapping's throughput (MaximumConcurrency, the mapping's 1,000, reserved
and account concurrency; ``batch_size`` records per batch, one batch a second per concurrent batch).
The API is throttled at ``mu`` with, as its token bucket, what the pipeline absorbs at once: the
StartExecution bucket when that refill binds, else one second of ``mu``. A caller above them gets
429 at once instead of a backlog.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from aws_cdk import Token

#: API Gateway's account-level defaults per Region: 10,000 requests/s, burst 5,000; a stage or
#: method limit above them has no effect ("Throttle requests to your REST APIs",
#: https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-request-throttling.html).
ACCOUNT_RATE_LIMIT = 10_000
ACCOUNT_BURST_LIMIT = 5_000
#: Assumed intake batch duration in seconds (the spike's and ``ops capacity``'s model use the same).
BATCH_SECONDS = 1.0
#: The regions with the larger Step Functions quotas ("Step Functions service quotas",
#: https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html).
LARGE_REGIONS = ("us-east-1", "us-west-2", "eu-west-1")


class QueueQuotas(Protocol):
    """The quotas the model reads: :class:`ServiceQuotas`, or the emulator's larger table."""

    @property
    def sfn_start_bucket(self) -> float: ...
    @property
    def sfn_start_refill(self) -> float: ...
    @property
    def sfn_express_start_bucket(self) -> float: ...
    @property
    def sfn_express_start_refill(self) -> float: ...
    @property
    def lambda_concurrency(self) -> float: ...
    @property
    def esm_max_concurrency(self) -> float: ...


@dataclass(frozen=True)
class ServiceQuotas:
    """AWS's default quotas the API throttle is sized by (large regions; :meth:`for_region` for the others).

    Rates are per second, buckets in tokens, concurrency in concurrent executions.
    """

    #: "Step Functions service quotas" (Quotas related to API action throttling): StartExecution,
    #: Standard, bucket 1,300 refilled at 300/s in the large regions; 800 and 150 elsewhere.
    sfn_start_bucket: float = 1300
    sfn_start_refill: float = 300
    #: Same page: StartExecution, Express, bucket 6,000 refilled at 6,000/s.
    sfn_express_start_bucket: float = 6000
    sfn_express_start_refill: float = 6000
    #: "Lambda quotas" (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html):
    #: account concurrency per Region, 1,000 by default.
    lambda_concurrency: float = 1000
    #: "Using Lambda with Amazon SQS" (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html):
    #: an event source mapping scales to at most 1,000 concurrent batches.
    esm_max_concurrency: float = 1000

    @classmethod
    def for_region(cls, region: str | None) -> ServiceQuotas:
        """The defaults of ``region``'s class; the large regions' when the region is not known (at synth)."""
        if region is None or region in LARGE_REGIONS:
            return cls()
        return cls(sfn_start_bucket=800, sfn_start_refill=150)


def intake_concurrency(quotas: QueueQuotas, figures: Mapping[str, Any]) -> float:
    """Concurrent intake batches: the smallest of the mapping's caps and the function's concurrency."""
    return min(
        quotas.esm_max_concurrency,
        figures["maximum_concurrency"] or quotas.esm_max_concurrency,
        figures["reserved_concurrency"] or quotas.lambda_concurrency,
        quotas.lambda_concurrency,
    )


def queue_ceilings(quotas: QueueQuotas, figures: Mapping[str, Any]) -> dict[str, float]:
    """Orders a second the orders queue can be served at, per limit: the StartExecution refill and
    the event source mapping's throughput (``figures``: ``workflow``, ``batch_size``,
    ``maximum_concurrency``, ``reserved_concurrency``, as intake's construct reports them)."""
    express = figures["workflow"] == "EXPRESS"
    return {
        "sfn_start_refill": quotas.sfn_express_start_refill if express else quotas.sfn_start_refill,
        "event_source_mapping": intake_concurrency(quotas, figures) * figures["batch_size"] / BATCH_SECONDS,
    }


def queue_service(quotas: QueueQuotas, figures: Mapping[str, Any]) -> tuple[float, float]:
    """``(mu, burst)``: the queue's service rate (the smallest :func:`queue_ceilings`) and the orders
    the StartExecution bucket absorbs at once when its refill is what binds (else 0)."""
    express = figures["workflow"] == "EXPRESS"
    start_refill = quotas.sfn_express_start_refill if express else quotas.sfn_start_refill
    start_bucket = quotas.sfn_express_start_bucket if express else quotas.sfn_start_bucket
    mu = min(queue_ceilings(quotas, figures).values())
    return mu, (start_bucket if mu == start_refill else 0.0)


def api_throttle(quotas: QueueQuotas, figures: Mapping[str, Any]) -> tuple[float, int]:
    """The order API's ``(rate, burst)``: the queue's service rate and what the pipeline absorbs at once."""
    mu, burst = queue_service(quotas, figures)
    return mu, max(1, round(burst or mu))


def api_throttle_for(figures: Mapping[str, Any], region: str | None = None) -> tuple[float, int]:
    """:func:`api_throttle` with AWS's default quotas of ``region``'s class (the large regions' when unknown)."""
    return api_throttle(ServiceQuotas.for_region(region), figures)


@dataclass(frozen=True)
class OrderApiThrottle:
    """Steady rate (requests/s) and burst (token bucket size) of the stage, ``POST /orders`` and the
    usage plan; checked against API Gateway's account-level defaults."""

    rate_limit: float
    burst_limit: int

    def __post_init__(self) -> None:
        if not 0 < self.rate_limit <= ACCOUNT_RATE_LIMIT:
            raise ValueError(f"rate_limit must be in (0, {ACCOUNT_RATE_LIMIT}], got {self.rate_limit}")
        if not 1 <= self.burst_limit <= ACCOUNT_BURST_LIMIT:
            raise ValueError(f"burst_limit must be in [1, {ACCOUNT_BURST_LIMIT}], got {self.burst_limit}")

    @classmethod
    def from_capacity(cls, figures: Mapping[str, Any], *, region: str) -> OrderApiThrottle:
        """Sized by :func:`~stacks.order_constructs.throttle.api_throttle` (the rate the pipeline
        sustains, and what it absorbs at once; ``ops capacity`` runs the same model) from intake's
        ``figures`` plus ``workflow``, with AWS's default quotas of ``region``'s class; the large
        regions' when the region is unknown at synth."""
        rate, burst = api_throttle_for(figures, None if Token.is_unresolved(region) else region)
        return cls(rate_limit=rate, burst_limit=burst)
