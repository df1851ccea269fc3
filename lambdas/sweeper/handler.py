"""Stuck-order sweeper (EventBridge schedule): finishes or parks stuck orders, reconciles recently
terminal ones with the providers' records (order_domain.sweeper), and publishes what it did."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics import MetricUnit

from lambda_resilience.correlation import correlation_scope, new_correlation_id
from lambda_resilience.tracing import traced
from order_domain.logs import get_logger
from order_domain.parked import count_parked
from order_domain.settings import load
from order_domain.settings.sweeper import SweeperSettings
from order_domain.wiring import sweeper_service

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

settings = load(SweeperSettings)
logger = get_logger()
metrics = Metrics()
sweeper = sweeper_service(settings, logger)

#: Metric name -> the SweepResult list it counts. One data point each per sweep (zeros included:
#: the alarms return to OK once nothing is found).
METRICS = {
    "StuckOrders": "stuck",
    "StuckOrdersFinished": "finished",
    "StuckOrdersParked": "parked",
    "SideEffectMismatches": "mismatched",
    "SweepErrors": "errors",
    "SweepDeferred": "deferred",
    "SettlementsPolled": "settle_polled",
    "LateSettlementParks": "settle_parked",
}

#: One per run (the heartbeat), and the NEEDS_ATTENTION orders counted at the end of the run.
HEARTBEAT_METRIC, PARKED_METRIC = "SweeperRuns", "ParkedOrders"


class SweepIncomplete(Exception):
    """Some orders could not be handled (logged each under its correlation ID): the function's
    Errors alarm fires, and EventBridge's retry sweeps again (a sweep repeats nothing it did)."""


@metrics.log_metrics
@traced
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    with correlation_scope(logger, f"sweep-{new_correlation_id()}"):

        def scope(correlation_id: str | None) -> Any:
            return correlation_scope(logger, correlation_id)

        result = sweeper.sweep(scope, lambda: context.get_remaining_time_in_millis() / 1000)
        for name, attribute in METRICS.items():
            metrics.add_metric(name=name, unit=MetricUnit.Count, value=len(getattr(result, attribute)))
        # The heartbeat (its alarm treats missing data as breaching: a sweeper that stopped pages) and the
        # parked-orders gauge (announced for as long as they are parked); docs/decisions/0023.
        metrics.add_metric(name=HEARTBEAT_METRIC, unit=MetricUnit.Count, value=1)
        parked = count_parked(settings.orders_table, client=sweeper.orders.client)
        metrics.add_metric(name=PARKED_METRIC, unit=MetricUnit.Count, value=parked)
        summary = {k: len(v) for k, v in vars(result).items()}
        logger.info("sweep done", extra={**summary, "threshold_seconds": settings.stuck_after_seconds})
        if result.errors:
            raise SweepIncomplete(f"{len(result.errors)} orders could not be handled: {sorted(result.errors)[:20]}")
    return {k: sorted(v) for k, v in vars(result).items()}
