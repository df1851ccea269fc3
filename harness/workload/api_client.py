"""The order API as its clients call it: ``POST /orders`` and ``GET /orders/{id}``, signed with SigV4.

The local run's producer (``--via api``) and ``ops local up``'s walkthrough use it against the
template's REST API served by :mod:`local_cloud.apigateway` on 127.0.0.1. Requests are signed for
``execute-api`` (:func:`ops.order_api.signed_request`) with the credentials this process's clients use.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from botocore.credentials import Credentials

from local_cloud.apigateway.model import rest_apis
from local_cloud.apigateway.server import ApiServer, gateway_for, local_secrets
from local_cloud.template import REGION
from ops.errors import OpsError
from ops.order_api import ApiAnswer, signed_request

if TYPE_CHECKING:
    from local_cloud.interfaces import Deployment

ORDERS_PATH = "/orders"
#: A client retries what the API throttles (429) or fails (5xx), with capped backoff (wall seconds).
RETRY_ATTEMPTS = 20
RETRY_BASE_SECONDS = 0.05
RETRY_MAX_SECONDS = 1.0


class ApiPortInUse(OpsError, RuntimeError):
    """The order API's port is taken: pick another with ``--api-port`` (0: any free port)."""


def idempotency_key(body: str) -> str:
    """The key a producer sends with an order: one per order and payment attempt (a retry of the
    same attempt reuses it), else a digest of the body (what cannot be parsed has no attempt)."""
    try:
        order = json.loads(body)
        if isinstance(order, dict) and isinstance(order.get("order_id"), str):
            return f"{order['order_id']}:{order.get('payment_attempt', 1)}"
    except (ValueError, RecursionError):
        pass
    return "body-" + hashlib.sha256(body.encode("utf-8", errors="replace")).hexdigest()[:32]


@dataclass
class OrderApi:
    """A SigV4 client of one stage of the order API (``base_url``: ``http://127.0.0.1:<port>/<stage>``)."""

    base_url: str
    accepted: int = 0
    refused: Counter[int] = field(default_factory=Counter)  # status -> count (4xx answers, no retry)
    retried: int = 0

    def request(self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None) -> ApiAnswer:
        (key, secret), *_ = local_secrets().items()
        return signed_request(method, f"{self.base_url}{path}", body, headers, Credentials(key, secret), REGION)

    def post_order(self, body: str, correlation_id: str | None, key: str | None = None) -> ApiAnswer:
        """POST one order body; retries 429 and 5xx; the last answer."""
        headers = {"Idempotency-Key": key or idempotency_key(body)}
        if correlation_id:
            headers["X-Correlation-Id"] = correlation_id
        answer = self.request("POST", ORDERS_PATH, body.encode("utf-8"), headers)
        for attempt in range(RETRY_ATTEMPTS):
            if answer.status != 429 and answer.status < 500:
                break
            self.retried += 1
            time.sleep(min(RETRY_MAX_SECONDS, RETRY_BASE_SECONDS * 2**attempt))
            answer = self.request("POST", ORDERS_PATH, body.encode("utf-8"), headers)
        if 200 <= answer.status < 300:
            self.accepted += 1
        else:
            self.refused[answer.status] += 1
        return answer

    def get_order(self, order_id: str) -> ApiAnswer:
        return self.request("GET", f"{ORDERS_PATH}/{order_id}")

    def summary(self) -> dict[str, Any]:
        """What the front door did (no body, no customer data)."""
        return {
            "accepted": self.accepted,
            "refused": {str(k): v for k, v in sorted(self.refused.items())},
            "retried": self.retried,
        }


def has_rest_api(deployment: Deployment) -> bool:
    return bool(rest_apis(deployment))


@contextmanager
def serve_order_api(deployment: Deployment, port: int = 0) -> Iterator[tuple[ApiServer, str]]:
    """Serve the template's REST API on 127.0.0.1; yield the server and its stage's base URL."""
    gateway = gateway_for(deployment)
    stage = next(iter(gateway.api.stages), None)
    if stage is None:
        raise LookupError(f"REST API {gateway.api.name} has no stage to serve")
    try:
        server = ApiServer(gateway, port).start()
    except OSError as exc:
        raise ApiPortInUse(f"127.0.0.1:{port} is in use ({exc.strerror}); pick another with --api-port") from None
    try:
        yield server, server.stage_url(stage)
    finally:
        server.stop()
