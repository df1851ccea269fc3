"""ShipOrder saga step."""

from order_domain.settings.shipping import ShippingStepSettings
from order_domain.step import build_step_handler
from order_domain.wiring import shipping_service

handler = build_step_handler("ship-order", lambda settings: shipping_service(settings).ship, ShippingStepSettings)
