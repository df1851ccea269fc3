"""RefundPayment (compensation) saga step."""

from order_domain.step import build_step_handler
from order_domain.wiring import payment_service

handler = build_step_handler(
    "refund-payment",
    lambda settings: payment_service(settings).refund,
    required=("IDEMPOTENCY_TABLE_NAME", "ORDERS_TABLE_NAME"),  # + a payment provider (see wiring)
)
