"""The payment provider's webhooks in the exploration (issue 40, point 5): what processors document.

A late change at the provider (a refund that succeeded fails days later: https://docs.stripe.com/refunds#failed-refunds)
queues its events: the ``refund.updated`` of the refund's success and the ``refund.failed`` after it. They are
delivered when time passes (a clock jump: late), newest first (out of order: Stripe does not guarantee order,
https://docs.stripe.com/webhooks#event-ordering) and each twice (at least once: a second delivery at the next
jump), signed Stripe-style at delivery, to the real endpoint (order_domain.webhook_endpoint) on the world's tables.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

from order_domain import clock, wiring
from order_domain.attention import NeedsAttentionNotifier
from order_domain.logs import get_logger
from order_domain.webhook_endpoint import WebhookEndpoint
from tests.explore.world import NEEDS_ATTENTION_URL, ORDERS

SECRET = "whsec_explore"
#: How many times each event is delivered.
DELIVERIES = 2


class ProviderWebhooks:
    """Queued events and their deliveries (see the module doc)."""

    def __init__(self) -> None:
        self.queue: list[tuple[dict[str, Any], int]] = []
        self.answers: list[str] = []
        self._endpoint: WebhookEndpoint | None = None

    def endpoint(self) -> WebhookEndpoint:
        if self._endpoint is None:  # built on first use: the world's clients exist by then
            notifier = NeedsAttentionNotifier(NEEDS_ATTENTION_URL, client=wiring.client("sqs"))
            logger = get_logger(service="explore-webhook", level="CRITICAL")
            self._endpoint = WebhookEndpoint(wiring.orders(ORDERS), notifier, lambda: [SECRET], logger=logger)
        return self._endpoint

    def refund_failed_later(self, order_id: str, attempt: int) -> None:
        now = int(clock.now())
        obj = {"order_id": order_id, "attempt": attempt, "effect": "refund", "reason": "processing_error"}
        self.queue.append(({**_event("refund.updated", now - 1, obj), "id": f"evt_{order_id}_ok"}, DELIVERIES))
        self.queue.append(({**_event("refund.failed", now, obj), "id": f"evt_{order_id}_failed"}, DELIVERIES))
        self.queue[-2][0]["data"]["object"]["status"] = "succeeded"

    def deliver(self) -> None:
        """Every queued event once, newest first; an event with deliveries left stays queued."""
        left = []
        for event, times in sorted(self.queue, key=lambda q: -int(q[0]["created"])):
            answer = self.endpoint().handle(_signed(event))
            self.answers.append(json.loads(answer["body"]).get("result") or json.loads(answer["body"])["error"])
            if answer["statusCode"] >= 500 or times > 1:
                left.append((event, times - 1 if answer["statusCode"] < 500 else times))
        self.queue = left


def _event(kind: str, created: int, obj: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "created": created, "data": {"object": dict(obj)}}


def _signed(event: dict[str, Any]) -> dict[str, Any]:
    payload = json.dumps(event).encode()
    t = int(clock.now())
    mac = hmac.new(SECRET.encode(), f"{t}.".encode() + payload, hashlib.sha256).hexdigest()
    return {
        "headers": {"stripe-signature": f"t={t},v1={mac}"},
        "body": base64.b64encode(payload).decode(),
        "isBase64Encoded": True,
    }
