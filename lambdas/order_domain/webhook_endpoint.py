"""The providers' webhook endpoint (``POST /webhooks/provider`` of the order API, a Lambda proxy integration:
payload format 1.0; a function URL's 2.0 reads the same): verify, then apply.

- a body over :data:`MAX_BODY_BYTES`: **413**, before the secret is read or a signature computed;
- no valid signature (:func:`order_domain.webhooks.verify`), or not an event of the contract: **400**, nothing
  read or written (a forger learns nothing; the provider's dashboard shows the refusal);
- a verified event of a type settlement follows: applied to its order (:func:`order_domain.settlement.apply`):
  **200** ``{"result": "applied" | "parked" | "older" | "duplicate" | "unknown_order"}``: an event delivered
  late, twice or out of order is acknowledged without harm, so the provider stops retrying it;
- the order kept moving under the write, or a dependency failed: **500**, and the provider delivers the event
  again (Stripe retries for up to three days: https://docs.stripe.com/webhooks#retries).

Log lines carry the order ID, the event's id and type and the outcome: never the body (a provider's event may
name the cardholder), never the signature.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

from order_domain import clock, settlement, webhooks
from order_domain.attention import NeedsAttentionNotifier
from order_domain.orders import OrderRepository

#: The largest body accepted: a Stripe event is a few kilobytes (https://docs.stripe.com/api/events/object);
#: API Gateway's own limit, 10 MB, cannot be lowered
#: (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-execution-service-limits-table.html).
MAX_BODY_BYTES = 64 * 1024


def _answer(status: int, **body: Any) -> dict[str, Any]:
    return {"statusCode": status, "headers": {"content-type": "application/json"}, "body": json.dumps(body)}


def _raw_body(event: dict[str, Any]) -> bytes:
    body = event.get("body") or ""
    return base64.b64decode(body) if event.get("isBase64Encoded") else body.encode()


class WebhookEndpoint:
    """Verifies and applies one webhook request (see the module doc)."""

    def __init__(
        self,
        orders: OrderRepository,
        notifier: NeedsAttentionNotifier,
        secrets: Callable[[], list[str]],
        *,
        logger: Any,
    ) -> None:
        """``secrets()``: the endpoint's signing secrets (more than one while a secret is rolled)."""
        self.orders = orders
        self.notifier = notifier
        self.secrets = secrets
        self.logger = logger

    def handle(self, event: dict[str, Any]) -> dict[str, Any]:
        try:
            payload = _raw_body(event)
            if len(payload) > MAX_BODY_BYTES:
                self.logger.warning("webhook refused", extra={"error_type": "BodyTooLarge", "bytes": len(payload)})
                return _answer(413, error="too large")
            headers = {str(k).lower(): v for k, v in (event.get("headers") or {}).items()}
            webhooks.verify(payload, headers.get(webhooks.HEADER, ""), self.secrets(), now=clock.now())
            parsed = json.loads(payload)
            obs = webhooks.observation(parsed)
        except (webhooks.SignatureRefused, ValueError) as exc:
            self.logger.warning("webhook refused", extra={"error_type": type(exc).__name__})
            return _answer(400, error="refused")
        if obs is None:
            self.logger.info("webhook event not followed", extra={"event_type": parsed.get("type")})
            return _answer(200, result="ignored")
        extra = {"order_id": obs.order_id, "event_id": obs.event_id, "event_type": parsed.get("type")}
        try:
            result = settlement.apply(self.orders, obs, notifier=self.notifier)
        except Exception as exc:  # answered 500: the provider delivers the event again
            self.logger.exception("webhook not applied", extra={**extra, "error_type": type(exc).__name__})
            return _answer(500, error="retry")
        self.logger.info("webhook applied", extra={**extra, "result": result})
        return _answer(200, result=result)
