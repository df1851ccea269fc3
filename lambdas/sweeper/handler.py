"""Stuck-order sweeper (EventBridge schedule): publishes StuckOrders and logs each stuck order."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics import MetricUnit

from lambda_resilience.correlation import correlation_scope, new_correlation_id
from lambda_resilience.tracing import traced
from order_domain.logs import get_logger
from order_domain.settings import Settings
from order_domain.sweeper import find_stuck

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

settings = Settings.from_env(required=("ORDERS_TABLE_NAME",))
logger = get_logger()
metrics = Metrics()


@metrics.log_metrics
@traced
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    with correlation_scope(logger, f"sweep-{new_correlation_id()}"):
        stuck = find_stuck(settings.orders_table or "", settings.stuck_after_seconds)
        metrics.add_metric(name="StuckOrders", unit=MetricUnit.Count, value=len(stuck))
        logger.info("sweep done", extra={"stuck": len(stuck), "threshold_seconds": settings.stuck_after_seconds})
    for order in stuck:
        with correlation_scope(logger, order.get("correlation_id")):
            logger.warning(
                "stuck order",
                extra={"order_id": order["order_id"], "status": order["status"], "updated_at": order.get("updated_at")},
            )
    return {"stuck": [o["order_id"] for o in stuck]}
