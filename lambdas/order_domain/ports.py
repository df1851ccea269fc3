"""What the saga needs from a payment provider and a carrier: typed ports, two adapters each.

Adapters: :mod:`order_domain.providers` (a provider deployed as a Lambda function: dev wires the
sandbox this way) and :mod:`order_domain.https_providers` (a real provider's HTTPS JSON API that
honours an ``Idempotency-Key`` header). The compensations rely on the statuses below: a refund
asks by the charge's key and moves back exactly what moved; a charge that never arrived has its
key cancelled, so a late charge with it cannot move money.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

#: Charge statuses. Only CAPTURED lets the saga continue; PARTIALLY_CAPTURED and AUTHORIZED mean
#: money is held or moved and must be refunded or voided; DECLINED moved nothing; CANCELLED: the
#: key was cancelled (by a refund) before the charge arrived; VOIDED: an authorisation released
#: (a lookup after the void). A refunded capture keeps its status with ``refunded: true``.
CAPTURED = "captured"
PARTIALLY_CAPTURED = "partially_captured"
AUTHORIZED = "authorized"
DECLINED = "declined"
CANCELLED = "cancelled"
VOIDED = "voided"
CHARGE_STATUSES = frozenset({CAPTURED, PARTIALLY_CAPTURED, AUTHORIZED, DECLINED, CANCELLED, VOIDED})
#: Charge statuses under which money moved (refund it) or is held (void it).
MONEY_MOVED = frozenset({CAPTURED, PARTIALLY_CAPTURED})
MONEY_HELD = frozenset({AUTHORIZED})
#: Refund statuses: each one means "nothing of this charge is held any more".
REFUNDED = "refunded"
NOTHING_TO_REFUND = "nothing_to_refund"
ALREADY_REFUNDED = "already_refunded"
REFUND_STATUSES = frozenset({REFUNDED, VOIDED, NOTHING_TO_REFUND, ALREADY_REFUNDED})
#: A refund the provider accepted and has not settled yet (Stripe answers ``pending`` and settles later,
#: possibly as ``failed``: https://docs.stripe.com/refunds#failed-refunds). Its settlement record on the
#: order follows it until final (:mod:`order_domain.settlement`).
PENDING_REFUND = "pending"
ACCEPTED_REFUNDS = REFUND_STATUSES | {PENDING_REFUND}
#: A refund lookup's ``settlement`` (Stripe's refund statuses: https://docs.stripe.com/api/refunds/object).
REFUND_SETTLEMENTS = frozenset({"pending", "succeeded", "failed", "canceled"})
#: Shipment statuses.
SHIPPED = "shipped"
REJECTED = "rejected"
SHIPMENT_STATUSES = frozenset({SHIPPED, REJECTED, CANCELLED})
#: The reason codes an answer's ``reason`` may carry into our errors, logs, execution histories and
#: messages. A provider's free text (it may name the cardholder, quote the card or the address) is
#: replaced by :data:`UNLISTED_REASON`: the allow-list, not a filter, decides what leaves the adapter.
REASON_CODES = frozenset(
    {
        "card_declined",
        "insufficient_funds",
        "insufficient_funds_for_full_capture",
        "capture_failed",
        "expired_card",
        "do_not_honor",
        "fraudulent",
        "processing_error",
        "undeliverable_address",
        "handed_over",
        "cancelled",
    }
)
UNLISTED_REASON = "unlisted"


@dataclass(frozen=True)
class Charge:
    status: str
    amount_cents: int = 0
    captured_cents: int = 0
    payment_id: str | None = None
    reason: str | None = None
    #: The provider gave this charge's money back (or released its hold) already.
    refunded: bool = False

    @property
    def outstanding_cents(self) -> int:
        """Money this charge still holds at the provider: captured and not refunded."""
        return self.captured_cents if self.status in MONEY_MOVED and not self.refunded else 0


@dataclass(frozen=True)
class Refund:
    status: str
    amount_cents: int = 0
    #: A lookup's settlement of the refund (docs/providers.md#settlement): ``pending``, ``succeeded``,
    #: ``failed`` or ``canceled`` (None: the provider does not say), at the provider's ``settled_at``.
    settlement: str | None = None
    settled_at: int = 0


@dataclass(frozen=True)
class Shipment:
    status: str
    tracking_id: str | None = None
    reason: str | None = None


class PaymentProvider(Protocol):
    """A card processor, every call keyed by our business key (its idempotency key)."""

    def charge(self, key: str, *, order_id: str, amount_cents: int, currency: str, payment_token: str) -> Charge: ...

    def find_charge(self, key: str) -> Charge | None: ...

    def refund(self, key: str, *, charge_key: str, order_id: str) -> Refund:
        """Refund (or void) exactly what the charge under ``charge_key`` moved; cancel that key if
        no charge arrived. Repeating it with the same ``key`` returns the first answer."""
        ...


@runtime_checkable
class RefundLookup(Protocol):
    """A provider that looks a refund up by its key (the settlement poll's fallback for webhooks)."""

    def find_refund(self, key: str) -> Refund | None: ...


class Carrier(Protocol):
    """A shipping carrier, every call keyed by our business key."""

    def ship(self, key: str, *, order_id: str, address: dict[str, Any], items: list[dict[str, Any]]) -> Shipment: ...

    def find_shipment(self, key: str) -> Shipment | None: ...

    def cancel_shipment(self, key: str, *, cancel_key: str) -> Shipment:
        """Cancel the shipment ShipOrder requested under ``key``; ``cancel_key`` is this request's own
        idempotency key (a carrier refuses one key used for two different requests)."""
        ...


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"expected a non-negative integer, got {type(value).__name__}")
    return value


def _opt_str(value: Any, limit: int = 256) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {type(value).__name__}")
    return value[:limit]


def _reason(value: Any) -> str | None:
    """An allow-listed reason code, :data:`UNLISTED_REASON` for anything else, None when absent."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"expected reason to be a string, got {type(value).__name__}")
    return value if value in REASON_CODES else UNLISTED_REASON


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected refunded to be a boolean, got {type(value).__name__}")
    return value


def parse_charge(data: Any) -> Charge:
    """A provider's charge answer, validated (ValueError if it is not one). ``refunded`` is optional
    (absent: false), so answers without it parse as before."""
    if not isinstance(data, dict) or data.get("status") not in CHARGE_STATUSES:
        raise ValueError("not a charge: status missing or unknown")
    return Charge(
        status=str(data["status"]),
        amount_cents=_int(data.get("amount_cents", 0)),
        captured_cents=_int(data.get("captured_cents", 0)),
        payment_id=_opt_str(data.get("payment_id")),
        reason=_reason(data.get("reason")),
        refunded=_bool(data.get("refunded", False)),
    )


def parse_refund(data: Any) -> Refund:
    """A provider's refund answer, validated (ValueError if it is not one)."""
    if not isinstance(data, dict) or data.get("status") not in ACCEPTED_REFUNDS:
        raise ValueError("not a refund: status missing or unknown")
    settled = data.get("settlement")
    if settled is not None and settled not in REFUND_SETTLEMENTS:
        raise ValueError("not a refund: settlement unknown")
    return Refund(
        status=str(data["status"]),
        amount_cents=_int(data.get("amount_cents", 0)),
        settlement=settled,
        settled_at=_int(data.get("settled_at", 0)),
    )


def parse_shipment(data: Any) -> Shipment:
    """A carrier's shipment answer, validated (ValueError if it is not one)."""
    if not isinstance(data, dict) or data.get("status") not in SHIPMENT_STATUSES:
        raise ValueError("not a shipment: status missing or unknown")
    return Shipment(
        status=str(data["status"]), tracking_id=_opt_str(data.get("tracking_id")), reason=_reason(data.get("reason"))
    )
