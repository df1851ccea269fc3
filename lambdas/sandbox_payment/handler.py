"""Sandbox payment provider (a stand-in for the third-party API), ledgered."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from lambda_resilience.correlation import correlation_scope, from_payload
from lambda_resilience.tracing import traced
from order_domain.logs import get_logger
from order_domain.settings import Settings
from sandbox import payment
from sandbox.ledger import Ledger

settings = Settings.from_env(required=("LEDGER_TABLE_NAME",))
logger = get_logger()
ledger = Ledger(settings.ledger_table or "")


@traced
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    with correlation_scope(logger, from_payload(event)):
        result = payment.handle(event, ledger)
        logger.info(
            "payment request",
            extra={
                "action": event.get("action"),
                "idempotency_key": event.get("idempotency_key"),
                "status": result.get("status"),
                "deduplicated": result.get("deduplicated"),
            },
        )
        return result
