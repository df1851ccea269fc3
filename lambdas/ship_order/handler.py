"""ShipOrder saga step: books the parcel, then records COMPLETED itself (decision 0024)."""

from order_domain.outcomes import completed_by_ship
from order_domain.settings.shipping import ShippingStepSettings
from order_domain.step import build_step_handler
from order_domain.wiring import orders, shipping_service

handler = build_step_handler(
    "ship-order",
    lambda settings: shipping_service(settings).ship,
    ShippingStepSettings,
    record_factory=lambda settings: completed_by_ship(orders(settings.orders_table)),
)
