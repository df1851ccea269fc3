"""The providers' webhook: signed Stripe-style (HMAC-SHA256 over ``timestamp.payload``, 300 s tolerance),
deduplicated by event id, accepted late, twice and out of order (issue 40, point 5)."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from order_domain import webhooks
from order_domain.settlement import Observation

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
    obs = webhooks.observation({"id": "evt_2", "type": kind, "created": 5, "data": {"object": obj}})
    assert (obs.effect, obs.status, obs.attempt) == (effect, status, 2)


@pytest.mark.parametrize(
    "body",
    [{}, {"id": "e", "type": "refund.updated", "created": "x", "data": {}}, {"id": "e", "type": "x", "created": 1}],
)
def test_webhooks_malformed_event_is_refused(body: dict) -> None:
    with pytest.raises(ValueError):
        webhooks.observation(body)
