"""The providers' webhook: signed Stripe-style (HMAC-SHA256 over ``timestamp.payload``, 300 s tolerance),
deduplicated by event id, accepted late, twice and out of order (issue 40, point 5)."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from order_domain import webhooks
from order_domain.settlement import Observation
from tests.handlers.conftest import present

SECRET = "whsec_test"


def _sign(payload: bytes, t: int, secret: str = SECRET) -> str:
    mac = hmac.new(secret.encode(), f"{t}.".encode() + payload, hashlib.sha256).hexdigest()
    return f"t={t},v1={mac}"


def _event(kind: str = "refund.updated", status: str = "failed", created: int = 1_000) -> bytes:
    obj = {"order_id": "o-1", "attempt": 1, "effect": "refund", "status": status, "reason": "Ada's card 4242"}
    return json.dumps({"id": "evt_1", "type": kind, "created": created, "data": {"object": obj}}).encode()


def test_webhooks_signature_valid_within_tolerance_is_accepted() -> None:
    payload = _event()
    webhooks.verify(payload, _sign(payload, 10_000), [SECRET], now=10_299)


def test_webhooks_signature_of_a_rotated_secret_is_accepted() -> None:
    payload = _event()
    header = _sign(payload, 10_000, "whsec_old") + "," + _sign(payload, 10_000).split(",")[1]
    webhooks.verify(payload, header, ["whsec_old_gone", SECRET], now=10_000)


@pytest.mark.parametrize(
    "case",
    ["tampered", "old", "future", "no-v1", "empty", "wrong-secret"],
)
def test_webhooks_signature_refused(case: str) -> None:
    payload, t, now = _event(), 10_000, 10_000
    header = _sign(payload, t)
    if case == "tampered":
        payload = payload.replace(b"failed", b"succeeded")
    elif case == "old":
        now = t + webhooks.TOLERANCE_SECONDS + 1
    elif case == "future":
        now = t - webhooks.TOLERANCE_SECONDS - 1
    elif case == "no-v1":
        header = f"t={t},v0=abc"
    elif case == "empty":
        header = ""
    elif case == "wrong-secret":
        header = _sign(payload, t, "whsec_other")
    with pytest.raises(webhooks.SignatureRefused):
        webhooks.verify(payload, header, [SECRET], now=now)


def test_webhooks_event_becomes_an_observation_without_free_text() -> None:
    obs = webhooks.observation(json.loads(_event(created=1_234)))
    assert obs == Observation("o-1", "refund", 1, "failed", 1_234, event_id="evt_1", reason="unlisted")


@pytest.mark.parametrize("kind", ["charge.dispute.created", "charge.failed", "refund.failed", "shipment.returned"])
def test_webhooks_known_event_types_parse(kind: str) -> None:
    effect = {"charge": "charge", "refund": "refund", "shipment": "shipment"}[kind.split(".")[0]]
    status = {"charge.dispute.created": "disputed", "charge.failed": "failed"}.get(kind, kind.split(".")[1])
    obj = {"order_id": "o-1", "attempt": 2, "effect": effect, "status": status}
    obs = present(webhooks.observation({"id": "evt_2", "type": kind, "created": 5, "data": {"object": obj}}))
    assert (obs.effect, obs.status, obs.attempt) == (effect, status, 2)


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"id": "e", "type": "refund.updated", "created": "x", "data": {}},
        {"id": "e", "type": "refund.failed", "created": 1},
    ],
)
def test_webhooks_malformed_event_is_refused(body: dict) -> None:
    with pytest.raises(ValueError):
        webhooks.observation(body)


# -- the endpoint (a Lambda function URL event, payload format 2.0) ----------------------------------------


def _url_event(payload: bytes, header: str | None) -> dict:
    import base64

    headers = {"content-type": "application/json"}
    if header is not None:
        headers["stripe-signature"] = header
    return {"headers": headers, "body": base64.b64encode(payload).decode(), "isBase64Encoded": True}


@pytest.fixture
def endpoint(tables, needs_attention_queue):
    import boto3

    from lambda_resilience.aws import to_item
    from order_domain import clock
    from order_domain.attention import NeedsAttentionNotifier
    from order_domain.orders import OrderRepository
    from order_domain.webhook_endpoint import WebhookEndpoint

    from .conftest import REGION

    ddb = boto3.client("dynamodb", region_name=REGION)
    item = {
        "order_id": "o-1",
        "status": "COMPENSATED",
        "payment_attempt": 1,
        "updated_at": clock.iso(),
        "correlation_id": "c-1",
        "history": [],
    }
    ddb.put_item(TableName=tables.orders, Item=to_item(item))
    orders = OrderRepository(tables.orders, client=ddb)
    notifier = NeedsAttentionNotifier(needs_attention_queue.url, client=boto3.client("sqs", region_name=REGION))
    return WebhookEndpoint(orders, notifier, lambda: [SECRET], logger=_Quiet()), orders


class _Quiet:
    def __getattr__(self, _: str):
        return lambda *a, **k: None


def _signed_now(payload: bytes) -> dict:
    import time

    return _url_event(payload, _sign(payload, int(time.time())))


def test_webhooks_endpoint_refuses_an_unsigned_request(endpoint) -> None:
    handle, orders = endpoint
    assert handle.handle(_url_event(_event(), None))["statusCode"] == 400
    assert handle.handle(_url_event(_event(), _sign(_event(), 1)))["statusCode"] == 400
    assert "settlement" not in orders.get("o-1")


def test_webhooks_endpoint_late_twice_and_out_of_order(endpoint) -> None:
    """refund.failed (created 3,000) arrives first, twice; refund.updated succeeded (created 2,000) after it."""
    handle, orders = endpoint
    failed = _event("refund.failed", "failed", created=3_000).replace(b"evt_1", b"evt_3")
    first, again = handle.handle(_signed_now(failed)), handle.handle(_signed_now(failed))
    assert (first["statusCode"], json.loads(first["body"])["result"]) == (200, "parked")
    assert (again["statusCode"], json.loads(again["body"])["result"]) == (200, "duplicate")
    older = handle.handle(_signed_now(_event("refund.updated", "succeeded", created=2_000)))
    assert json.loads(older["body"])["result"] == "older"
    item = orders.get("o-1")
    assert item["status"] == "NEEDS_ATTENTION" and item["settlement"]["refund#1"]["status"] == "failed"


def test_webhooks_endpoint_event_type_not_followed_is_acknowledged(endpoint) -> None:
    handle, _ = endpoint
    body = json.dumps({"id": "evt_x", "type": "customer.created", "created": 1, "data": {"object": {}}}).encode()
    assert handle.handle(_signed_now(body))["statusCode"] == 200


def _rest_proxy_event(payload: bytes, header: str) -> dict:
    """API Gateway's REST proxy event (payload format 1.0): the body as text, headers as the provider sent them."""
    headers = {"Content-Type": "application/json", "Stripe-Signature": header}
    return {
        "resource": "/webhooks/provider",
        "httpMethod": "POST",
        "headers": headers,
        "multiValueHeaders": {k: [v] for k, v in headers.items()},
        "body": payload.decode(),
        "isBase64Encoded": False,
    }


def test_webhooks_endpoint_rest_proxy_event_is_verified_on_its_text_body(endpoint) -> None:
    import time

    handle, _ = endpoint
    payload = _event("refund.failed", "failed", created=3_000)
    answer = handle.handle(_rest_proxy_event(payload, _sign(payload, int(time.time()))))
    assert (answer["statusCode"], json.loads(answer["body"])["result"]) == (200, "parked")
    assert handle.handle(_rest_proxy_event(payload, _sign(payload, 1)))["statusCode"] == 400


def test_webhooks_endpoint_body_over_the_limit_is_413_before_the_secret_is_read() -> None:
    from order_domain.webhook_endpoint import MAX_BODY_BYTES, WebhookEndpoint

    def no_secret() -> list[str]:
        raise AssertionError("the secret is read for a body over the limit")

    handle = WebhookEndpoint(None, None, no_secret, logger=_Quiet())  # type: ignore[arg-type]
    assert MAX_BODY_BYTES == 64 * 1024  # a Stripe event is a few kilobytes
    payload = b"{" + b" " * MAX_BODY_BYTES + b"}"
    assert handle.handle(_rest_proxy_event(payload, _sign(payload, 10)))["statusCode"] == 413
