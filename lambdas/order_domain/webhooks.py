"""The providers' webhook events: verified Stripe-style, then turned into settlement observations.

**Signature** (https://docs.stripe.com/webhooks#verify-manually): the ``Stripe-Signature`` header is
``t=<unix seconds>,v1=<hex>[,v1=<hex>...]``; each ``v1`` is HMAC-SHA256, keyed with the endpoint's signing
secret, of ``"<t>.<raw body>"``. An event is accepted when one ``v1`` matches one of our secrets (more than
one while a secret is rolled) in constant time, and ``t`` is within :data:`TOLERANCE_SECONDS` of now (Stripe's
libraries default to five minutes, against replays). The raw body is verified, never a re-serialised one.

**Events** (Stripe's event object: ``{"id", "type", "created", "data": {"object": {...}}}``,
https://docs.stripe.com/api/events/object): the object names the order, the attempt, the effect and its
status in our provider contract (docs/providers.md). Stripe delivers an event at least once, retries for up
to three days and does not guarantee order (https://docs.stripe.com/webhooks#handle-duplicate-events,
https://docs.stripe.com/webhooks#event-ordering): :mod:`order_domain.settlement` dedupes by ``id`` and
never lets an older ``created`` overwrite a newer state.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from typing import Any

from order_domain.ports import REASON_CODES, UNLISTED_REASON
from order_domain.settlement import CHARGE, REFUND, SHIPMENT, Observation

#: Stripe's default tolerance between the signed timestamp and now.
TOLERANCE_SECONDS = 300
HEADER = "stripe-signature"
#: Event type -> (effect, status); the other types are acknowledged and ignored.
EVENT_TYPES: dict[str, tuple[str, str | None]] = {
    "charge.succeeded": (CHARGE, "succeeded"),
    "charge.pending": (CHARGE, "pending"),
    "charge.failed": (CHARGE, "failed"),
    "charge.dispute.created": (CHARGE, "disputed"),
    "refund.created": (REFUND, None),
    "refund.updated": (REFUND, None),
    "refund.failed": (REFUND, "failed"),
    "shipment.updated": (SHIPMENT, None),
    "shipment.delivered": (SHIPMENT, "delivered"),
    "shipment.returned": (SHIPMENT, "returned"),
}
MAX_EVENT_ID = 128


class SignatureRefused(Exception):
    """The request is not a provider's signed event (answered 400; the reason is never logged with the body)."""


def _parts(header: str) -> tuple[int, list[str]]:
    timestamp: int | None = None
    signatures: list[str] = []
    for element in header.split(","):
        prefix, _, value = element.strip().partition("=")
        if prefix == "t" and value.isdigit():
            timestamp = int(value)
        elif prefix == "v1" and value:
            signatures.append(value)
    if timestamp is None or not signatures:
        raise SignatureRefused("no timestamp or no v1 signature")
    return timestamp, signatures


def verify(payload: bytes, header: str, secrets: Iterable[str], *, now: float) -> None:
    """Accept ``payload`` only if ``header`` signs it with one of ``secrets`` within the tolerance."""
    timestamp, signatures = _parts(header or "")
    if abs(now - timestamp) > TOLERANCE_SECONDS:
        raise SignatureRefused("timestamp outside the tolerance")
    signed = f"{timestamp}.".encode() + payload
    for secret in secrets:
        expected = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
        if any(hmac.compare_digest(expected, candidate) for candidate in signatures):
            return
    raise SignatureRefused("no signature matches")


def _field(obj: dict[str, Any], name: str, kind: type) -> Any:
    value = obj.get(name)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ValueError(f"event field {name} missing or not {kind.__name__}")
    return value


def observation(event: Any) -> Observation | None:
    """The settlement observation of a verified event; None for a type we do not follow.
    ``ValueError``: not an event of the contract. A provider's free-text reason becomes ``unlisted``."""
    if not isinstance(event, dict):
        raise ValueError("event is not an object")
    event_id = _field(event, "id", str)[:MAX_EVENT_ID]
    created = _field(event, "created", int)
    kind = _field(event, "type", str)
    if kind not in EVENT_TYPES:
        return None  # acknowledged: an endpoint subscribed to more types than settlement follows
    effect, status = EVENT_TYPES[kind]
    data = _field(event, "data", dict)
    obj = _field(data, "object", dict)
    if obj.get("effect", effect) != effect:
        raise ValueError("event object's effect disagrees with its type")
    reason = obj.get("reason")
    code = reason if reason in REASON_CODES else (UNLISTED_REASON if reason is not None else None)
    return Observation(
        order_id=_field(obj, "order_id", str),
        effect=effect,
        attempt=_field(obj, "attempt", int),
        status=status or _field(obj, "status", str),
        at=created,
        event_id=event_id,
        reason=code,
    )
