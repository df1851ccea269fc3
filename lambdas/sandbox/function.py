"""The sandbox provider functions' handler (payment and carrier share it): one request, ledgered."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lambda_resilience.correlation import correlation_scope, from_payload
from lambda_resilience.tracing import traced
from order_domain.logs import get_logger
from order_domain.settings import load
from order_domain.wiring import client
from sandbox.ledger import Ledger
from sandbox.settings import SandboxSettings

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

Handler = Callable[[dict[str, Any], "LambdaContext"], dict[str, Any]]


def provider_handler(provider: str, handle: Callable[[dict[str, Any], Ledger], dict[str, Any]]) -> Handler:
    """A Lambda handler answering ``provider``'s requests with ``handle`` (:func:`sandbox.payment.handle`
    or :func:`sandbox.carrier.handle`). Settings and the ledger are built once, here (import time)."""
    settings = load(SandboxSettings)
    logger = get_logger()
    book = Ledger(settings.ledger_table, client=client("dynamodb"))

    @traced
    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        with correlation_scope(logger, from_payload(event)):
            result = handle(event, book)
            logger.info(
                f"{provider} request",
                extra={
                    "action": event.get("action"),
                    "idempotency_key": event.get("idempotency_key"),
                    "status": result.get("status"),
                    "deduplicated": result.get("deduplicated"),
                },
            )
            return result

    return handler
