"""ChargePayment saga step."""

from order_domain.settings.payment import PaymentStepSettings
from order_domain.step import build_step_handler
from order_domain.wiring import payment_service

handler = build_step_handler("charge-payment", lambda settings: payment_service(settings).charge, PaymentStepSettings)
