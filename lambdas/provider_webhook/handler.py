"""The providers' webhook (``POST /webhooks/provider`` of the order API): signed events of settlement,
refunds, disputes and returned parcels, verified and applied to their orders (order_domain.webhook_endpoint)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lambda_resilience.correlation import correlation_scope, new_correlation_id
from lambda_resilience.tracing import traced
from order_domain.logs import get_logger
from order_domain.settings import load
from order_domain.settings.webhook import WebhookSettings
from order_domain.wiring import webhook_endpoint

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

settings = load(WebhookSettings)
logger = get_logger()
endpoint = webhook_endpoint(settings, logger)


@traced
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    with correlation_scope(logger, f"webhook-{new_correlation_id()}"):
        return endpoint.handle(event)
