"""ReserveInventory saga step (and the saga's repair entry: ``"compensate": true`` -> compensations)."""

from typing import Any

from order_domain.saga_start import CompensationRequested, compensation_requested
from order_domain.settings.inventory import InventoryStepSettings
from order_domain.step import build_step_handler
from order_domain.wiring import inventory_service


def _route_repair(event: Any) -> None:
    """Before the idempotency record (a reservation already made must not answer this request), inside
    the middleware's accounting (an expected error, never a page: issue 41)."""
    if compensation_requested(event):
        raise CompensationRequested(f"order {event.get('order_id')}: compensation requested by an operator")


handler = build_step_handler(
    "reserve-inventory",
    lambda settings: inventory_service(settings).reserve,
    InventoryStepSettings,
    preempt=_route_repair,
)
