"""Charging and refunding through the payment provider, keyed by business identity."""

from __future__ import annotations

from typing import Any

from lambda_resilience.exceptions import UncachedAnswer
from lambda_resilience.idempotency import business_key
from lambda_resilience.step import first_call
from order_domain import intents, settlement
from order_domain.errors import (
    OrderMovedOn,
    PaymentDeclined,
    PaymentIncomplete,
    ProviderForgot,
    ProviderUnavailable,
    RefundIncomplete,
)
from order_domain.model import order_total_cents
from order_domain.orders import OrderRepository
from order_domain.ports import (
    ACCEPTED_REFUNDS,
    AUTHORIZED,
    CANCELLED,
    CAPTURED,
    DECLINED,
    NOTHING_TO_REFUND,
    PARTIALLY_CAPTURED,
    PENDING_REFUND,
    REFUNDED,
    PaymentProvider,
)
from order_domain.status import OrderStatus

CHARGE = "charge-payment"
REFUND = "refund-payment"
#: Charge outcomes that moved and hold nothing, and whose key a late charge cannot reuse.
NOTHING_MOVED = frozenset({DECLINED, CANCELLED})
#: What a compensation returns when its attempt is no longer the order's live one (a newer attempt
#: owns the order, or the order is already terminal: COMPLETED, COMPENSATED): it does nothing.
STALE = {"status": "stale", "amount_cents": 0}


def recorded(order: dict[str, Any], status: OrderStatus, attempt: int) -> bool:
    """Whether the order's history says ``attempt`` reached ``status`` (our own record of a forward outcome)."""
    return any(
        entry.get("status") == status.value and int(entry.get("attempt", 1)) == attempt
        for entry in order.get("history") or []
    )


class PaymentService:
    """The provider receives our business key as its idempotency key, so a retried or
    duplicated charge is deduplicated by the provider too (belt and braces)."""

    def __init__(self, provider: PaymentProvider, orders: OrderRepository) -> None:
        self.provider = provider
        self.orders = orders

    def charge(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Charge this attempt's total with its token (both read from the orders table, with the charge's
        intent recorded first: decision 0028). A charge intended longer ago than the provider keeps keys
        is looked up first: no record then is an unknown outcome (:class:`ProviderForgot`), never a new
        charge under the same key. A PAYMENT_CHARGED write refused after the capture raises
        :class:`OrderMovedOn` (another actor moved the order: the saga compensates, never ships)."""
        order_id, attempt = payload["order_id"], payload["payment_attempt"]
        item = intents.record(self.orders, order_id, attempt, CHARGE, intents.FORWARD_STAGES[CHARGE], first_call)
        order = dict(item["order"])
        key = business_key(order_id, CHARGE, attempt)
        if recorded(item, OrderStatus.PAYMENT_CHARGED, attempt):
            # Our own record says this attempt captured (a rerun after its idempotency record expired
            # or was lost): never send the charge again, the provider may have forgotten the key by now
            # and would take it for a new charge. Its answer by lookup, else our record's.
            found = self.provider.find_charge(key)
            if found is not None and found.status == CAPTURED:
                return {"status": CAPTURED, "payment_id": found.payment_id, "amount_cents": found.amount_cents}
            return {"status": CAPTURED, "payment_id": None, "amount_cents": order_total_cents(order)}
        if intents.unverifiable(item, CHARGE, attempt) and self.provider.find_charge(key) is None:
            raise ProviderForgot(f"order {order_id}: attempt {attempt} charged before the key window; no record now")
        result = self.provider.charge(
            key,
            order_id=order_id,
            amount_cents=order_total_cents(order),
            currency=order["currency"],
            payment_token=order["payment_token"],
        )
        if result.status in (PARTIALLY_CAPTURED, AUTHORIZED):
            # Money may be held or moved: the saga must refund/void, not just release stock.
            raise PaymentIncomplete(f"order {order_id}: charge ended {result.status} ({result.reason})")
        if result.status != CAPTURED:
            raise PaymentDeclined(f"order {order_id}: payment {result.status} ({result.reason or 'no reason'})")
        moved = self.orders.transition(order_id, OrderStatus.PAYMENT_CHARGED, attempt=attempt)
        if moved == "stale" and intents.moved_on(self.orders, order_id, attempt, CHARGE):
            raise OrderMovedOn(f"order {order_id}: captured, but the order moved past PAYMENT_CHARGED")
        return {"status": CAPTURED, "payment_id": result.payment_id, "amount_cents": result.amount_cents}

    def refund(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Give back what this attempt's charge really moved, whatever the order's recorded status.

        The charge is looked up by its key first (the provider's records, not the status the
        charge step last wrote: its answer may have been lost): captured or partly captured ->
        refund exactly that; authorised -> void the hold; absent -> the refund call cancels the key,
        so a late charge with it cannot move money; declined or cancelled -> nothing moved, no
        call. A refund whose answer disagrees with the lookup raises :class:`RefundIncomplete`
        (the saga parks the order). An order the table does not know was never charged (charge
        refuses unknown orders before calling the provider): nothing to undo, and no provider call.
        A terminal order or a replaced attempt is left alone (:data:`STALE`, computed again on every call:
        never cached); a charge still in flight is waited for (transient), and a capture we recorded, or
        a charge intended before the provider's key window, that the provider no longer knows parks the
        order (:class:`ProviderForgot`). The refund's own intent is recorded before it is sent.
        """
        order_id, attempt = payload["order_id"], payload["payment_attempt"]
        if self.orders.find(order_id) is None:
            raise UncachedAnswer({"status": "nothing_to_undo", "reason": "unknown order", "amount_cents": 0})
        order = intents.compensation_intent(self.orders, order_id, attempt, payload, REFUND, first_call)
        if order is None:
            raise UncachedAnswer(dict(STALE))  # terminal or replaced (parked, nobody asking: OrderParked raised)
        charge_key = business_key(order_id, CHARGE, attempt)
        charge = self.provider.find_charge(charge_key)  # in flight -> ProviderInFlight: retried, then parked
        if charge is None and (
            recorded(order, OrderStatus.PAYMENT_CHARGED, attempt) or intents.unverifiable(order, CHARGE, attempt)
        ):
            # A capture we recorded, or a charge we sent before the key window, that the provider no longer
            # knows: cancelling the key now could end COMPENSATED with the money kept.
            raise ProviderForgot(f"order {order_id}: attempt {attempt} may be charged; the provider has no record")
        if charge is not None and charge.status in NOTHING_MOVED:
            return {"status": NOTHING_TO_REFUND, "amount_cents": 0}
        result = self.provider.refund(business_key(order_id, REFUND, attempt), charge_key=charge_key, order_id=order_id)
        if result.status not in ACCEPTED_REFUNDS:
            raise ProviderUnavailable(f"order {order_id}: refund ended {result.status}")
        if result.status == PENDING_REFUND:
            # Accepted, not settled: followed until final (webhook, else the sweeper's poll); a late failure parks.
            settlement.apply(self.orders, settlement.step_sighting(order_id, settlement.REFUND, attempt), notifier=None)
        if (
            charge is not None
            and result.status in (REFUNDED, PENDING_REFUND)
            and (result.amount_cents != charge.captured_cents)
        ):
            raise RefundIncomplete(
                f"order {order_id}: the provider captured {charge.captured_cents} cents "
                f"and refunded {result.amount_cents}"
            )
        return {"status": result.status, "amount_cents": result.amount_cents}
