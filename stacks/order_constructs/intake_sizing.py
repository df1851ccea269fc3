"""Intake's event source MaximumConcurrency and throttle requeues, derived from AWS's documented scaling and
the seeds' Black Friday (:mod:`order_domain.seed_load`), so that the peak becomes latency and cancels no valid
order.

**Concurrency.** Every function of the account shares its concurrency (1,000 by default:
https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html); a saga step refused for want of it
fails with ``Lambda.TooManyRequestsException``, which the step's own retrier waits out for minutes and then parks
the order (a lost sale, paged). Lambda scales each function by 1,000 execution environments every 10 seconds
(https://docs.aws.amazon.com/lambda/latest/dg/scaling-behavior.html), so a burst is absorbed in seconds; a
throttle that lasts is the account's concurrency spent. So intake may take only what the others leave:

- the provider webhook: at most its route's throttle times its timeout (``stacks/order_constructs/webhook.py``);
- the scheduled functions (sweeper, DLQ replay): one each;
- the saga: each execution intake starts runs :data:`SAGA_TASKS` Lambda steps of about :data:`STEP_SECONDS`
  (Little's law: concurrency = starts a second x steps x seconds a step).

An SQS event source polls with ``MaximumConcurrency`` batches at most, one batch of ``batch_size`` records each
:data:`~stacks.order_constructs.throttle.BATCH_SECONDS` (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html:
MaximumConcurrency 2 to 1,000), so intake starts at most ``c x batch_size / BATCH_SECONDS`` executions a second
and costs ``c``. The largest ``c`` for which intake plus the saga it feeds fit what is left is
``left / (batch_size / BATCH_SECONDS x SAGA_TASKS x STEP_SECONDS + 1)``, and no more than what the
StartExecution refill can take (https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html).

**Requeues.** A record whose StartExecution is throttled is sent back with a delay, 5 s doubling to 60 s with
equal jitter, so each delay is at least half its ceiling (``lambda_resilience.backoff``). Executions start at
most at the StartExecution refill whatever intake's batches take, so at the seeds' peak StartExecution may
refuse for as long as the peak plus the drain of its backlog at that refill. An order kept throttled all that
time needs as many requeues as its shortest delays take to add up to it (:func:`requeues_to_outlast`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from order_domain import seed_load
from stacks.order_constructs.throttle import BATCH_SECONDS, QueueQuotas
from stacks.order_constructs.webhook import WEBHOOK_RATE_LIMIT, WEBHOOK_TIMEOUT

#: The saga's Lambda steps per order on its happy path (ReserveInventory, ChargePayment, ShipOrder;
#: tests/infra/test_intake_sizing.py keeps it equal to the template's).
SAGA_TASKS = 3
#: An assumption, as :data:`~stacks.order_constructs.throttle.BATCH_SECONDS` is for an intake batch: a step
#: waits on one provider call and a few DynamoDB writes. Replace it with the steps' measured p99 Duration.
STEP_SECONDS = 1.0
#: The sweeper and the DLQ replay: scheduled, one invocation at a time.
SCHEDULED_CONCURRENCY = 2
#: An event source mapping's MaximumConcurrency range (AWS::Lambda::EventSourceMapping ScalingConfig).
MIN_MAXIMUM_CONCURRENCY, MAX_MAXIMUM_CONCURRENCY = 2, 1000
#: Lambda's scaling rate per function (scaling-behavior.html above).
SCALING_ENVIRONMENTS, SCALING_SECONDS = 1000, 10
#: Intake's requeue delays (lambda_resilience.backoff.ThrottleBackoff: base, cap; equal jitter).
REQUEUE_BASE_SECONDS, REQUEUE_CAP_SECONDS = 5, 60


def webhook_concurrency() -> float:
    """The webhook function's largest concurrency: its route's rate limit times its timeout (250)."""
    return WEBHOOK_RATE_LIMIT * WEBHOOK_TIMEOUT.to_seconds()


def saga_concurrency(starts_per_second: float) -> float:
    """The saga steps' concurrency while executions start at ``starts_per_second``."""
    return starts_per_second * SAGA_TASKS * STEP_SECONDS


def requeues_to_outlast(seconds: float, *, base: float = REQUEUE_BASE_SECONDS, cap: float = REQUEUE_CAP_SECONDS) -> int:
    """The fewest requeues whose shortest delays add up to ``seconds``: equal jitter draws each between half its
    ceiling and the ceiling, in whole seconds (``int(uniform(ceiling / 2, ceiling))``)."""
    total, n = 0.0, 0
    while total < seconds:
        total += math.floor(min(cap, base * 2**n) / 2)
        n += 1
    return n


def peak_throttle_seconds(quotas: QueueQuotas) -> float:
    """How long StartExecution may refuse at the seeds' peak: the peak, then its backlog drained at the refill
    (the queue's backlog after the bucket, the same fluid model as ``ops capacity``)."""
    peak, refill = seed_load.peak_per_second(), quotas.sfn_start_refill
    seconds = seed_load.PEAK_MINUTES * 60
    backlog = max(0.0, (peak - refill) * seconds - quotas.sfn_start_bucket)
    return seconds + backlog / refill if backlog else 0.0


@dataclass(frozen=True)
class IntakeSizing:
    """What intake may take of the account, and what that leaves the others (concurrent executions)."""

    account: float
    webhook: float
    scheduled: float
    max_concurrency: int
    starts_per_second: float
    saga: float
    requeues: int
    throttle_seconds: float

    @property
    def total(self) -> float:
        """Intake, the saga it feeds, the webhook and the scheduled functions at once."""
        return self.max_concurrency + self.saga + self.webhook + self.scheduled

    @property
    def scale_up_seconds(self) -> float:
        """How long Lambda takes to give the largest of the saga's steps its share (scaling-behavior.html)."""
        return math.ceil(self.saga / SAGA_TASKS / SCALING_ENVIRONMENTS) * SCALING_SECONDS

    def as_dict(self) -> dict[str, Any]:
        return {
            "maximum_concurrency": self.max_concurrency,
            "starts_per_second": round(self.starts_per_second, 1),
            "saga_concurrency": round(self.saga, 1),
            "webhook_concurrency": self.webhook,
            "scheduled_concurrency": self.scheduled,
            "account_concurrency": self.account,
            "requeues": self.requeues,
            "throttle_seconds": round(self.throttle_seconds, 1),
            "scale_up_seconds": self.scale_up_seconds,
        }


def size_intake(quotas: QueueQuotas, batch_size: int) -> IntakeSizing:
    """Intake's MaximumConcurrency and requeues under ``quotas`` (see the module doc)."""
    left = quotas.lambda_concurrency - webhook_concurrency() - SCHEDULED_CONCURRENCY
    per_batch = batch_size / BATCH_SECONDS  # starts a second per concurrent batch
    fits = left / (per_batch * SAGA_TASKS * STEP_SECONDS + 1)
    refill_batches = quotas.sfn_start_refill / per_batch
    c = int(min(fits, math.ceil(refill_batches), quotas.esm_max_concurrency, MAX_MAXIMUM_CONCURRENCY))
    if c < MIN_MAXIMUM_CONCURRENCY:
        raise ValueError(f"the account's concurrency ({quotas.lambda_concurrency:g}) leaves intake no batches")
    starts = min(c * per_batch, quotas.sfn_start_refill)
    throttle = peak_throttle_seconds(quotas)
    return IntakeSizing(
        account=quotas.lambda_concurrency,
        webhook=webhook_concurrency(),
        scheduled=SCHEDULED_CONCURRENCY,
        max_concurrency=c,
        starts_per_second=starts,
        saga=saga_concurrency(starts),
        requeues=requeues_to_outlast(throttle),
        throttle_seconds=throttle,
    )


def sizing_of(quotas: QueueQuotas, figures: Mapping[str, Any]) -> IntakeSizing:
    """:func:`size_intake` for intake's template ``figures`` (``batch_size``)."""
    return size_intake(quotas, int(figures["batch_size"]))
