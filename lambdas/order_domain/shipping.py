"""Shipping through the carrier, keyed by business identity."""

from __future__ import annotations

from typing import Any

from lambda_resilience.exceptions import UncachedAnswer
from lambda_resilience.idempotency import business_key
from lambda_resilience.step import first_call
from order_domain import intents
from order_domain.errors import ProviderForgot, ProviderUnavailable, ShipmentNotCancellable, ShippingUnavailable
from order_domain.orders import OrderRepository
from order_domain.payments import recorded
from order_domain.ports import CANCELLED, REJECTED, SHIPPED, Carrier
from order_domain.status import OrderStatus

SHIP = "ship-order"
CANCEL = "cancel-shipment"


class ShippingService:
    def __init__(self, carrier: Carrier, orders: OrderRepository) -> None:
        self.carrier = carrier
        self.orders = orders

    def ship(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Ship this attempt's items to its address (both read from the orders table). The order's
        status is written after this action by :func:`order_domain.outcomes.completed_by_ship` (decision 0024).
        The ship's intent is recorded first (decision 0028); one intended longer ago than the carrier keeps
        keys is looked up first, and no record then is an unknown outcome (:class:`ProviderForgot`)."""
        order_id, attempt = payload["order_id"], payload["payment_attempt"]
        item = intents.record(self.orders, order_id, attempt, SHIP, intents.FORWARD_STAGES[SHIP], first_call)
        order = dict(item["order"])
        key = business_key(order_id, SHIP, attempt)
        if recorded(item, OrderStatus.SHIPPED, attempt):
            # Our own record says this attempt shipped (a rerun after its idempotency record expired):
            # never ship again, the carrier may have forgotten the key. Its answer by lookup, else ours.
            found = self.carrier.find_shipment(key)
            return {"status": SHIPPED, "tracking_id": found.tracking_id if found is not None else None}
        if intents.unverifiable(item, SHIP, attempt) and self.carrier.find_shipment(key) is None:
            raise ProviderForgot(f"order {order_id}: attempt {attempt} shipped before the key window; no record now")
        result = self.carrier.ship(
            key,
            order_id=order_id,
            address=order["shipping_address"],
            items=order["items"],
        )
        if result.status != SHIPPED:
            raise ShippingUnavailable(f"order {order_id}: carrier {result.status} ({result.reason or ''})")
        return {"status": SHIPPED, "tracking_id": result.tracking_id}

    def cancel(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Undo ShipOrder by what really happened at the carrier, looked up by ShipOrder's key.

        - nothing there: cancel the key (a late ship request with it is answered ``cancelled``);
        - shipped: cancel the parcel;
        - rejected or already cancelled: nothing to undo;
        - the carrier refuses to cancel (the parcel was handed over): :class:`ShipmentNotCancellable`
          (permanent; the saga parks the order at once, without a refund).

        An order the table does not know was never shipped (ShipOrder refuses unknown orders before
        calling the carrier): nothing to undo, and no carrier call. A terminal order or a replaced
        attempt is left alone (computed again on every call: never cached), a parked one nobody asked
        about refused (:class:`~order_domain.errors.OrderParked`); a ship still in flight is
        waited for (transient); a shipment we recorded, or a ship intended before the carrier's key
        window (decision 0028), that the carrier no longer knows parks the order (:class:`ProviderForgot`):
        the parcel may be out, and the definition refunds nothing after a failed cancel.
        """
        order_id, attempt = payload["order_id"], payload["payment_attempt"]
        if self.orders.find(order_id) is None:
            raise UncachedAnswer({"status": "nothing_to_undo", "reason": "unknown order"})
        order = intents.compensation_intent(self.orders, order_id, attempt, payload, CANCEL, first_call)
        if order is None:
            raise UncachedAnswer({"status": "stale"})  # terminal or replaced (parked: OrderParked raised)
        key = business_key(order_id, SHIP, attempt)
        found = self.carrier.find_shipment(key)  # in flight -> ProviderInFlight: retried, then parked
        if found is None and (
            recorded(order, OrderStatus.SHIPPED, attempt) or intents.unverifiable(order, SHIP, attempt)
        ):
            raise ProviderForgot(f"order {order_id}: attempt {attempt} may have shipped; the carrier has no record")
        if found is not None and found.status in (REJECTED, CANCELLED):
            return {"status": "nothing_to_undo", "shipment": found.status}
        result = self.carrier.cancel_shipment(key, cancel_key=business_key(order_id, CANCEL, attempt))
        if result.status == CANCELLED:
            return {"status": CANCELLED, "shipment": found.status if found is not None else "not_found"}
        if result.status == REJECTED:  # a ship request arrived between the lookup and the cancel: rejected
            return {"status": "nothing_to_undo", "shipment": REJECTED}
        if result.status == SHIPPED:
            raise ShipmentNotCancellable(
                f"order {order_id}: the carrier refused to cancel shipment {result.tracking_id or ''} "
                f"({result.reason or 'no reason given'})"
            )
        raise ProviderUnavailable(f"order {order_id}: cancel ended {result.status}")  # unreachable: parsed statuses
