"""CancelShipment saga step (ShipOrder's compensation)."""

from order_domain.settings.shipping import ShippingStepSettings
from order_domain.step import build_step_handler
from order_domain.wiring import shipping_service

handler = build_step_handler(
    "cancel-shipment", lambda settings: shipping_service(settings).cancel, ShippingStepSettings
)
