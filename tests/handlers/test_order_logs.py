"""order_domain.logs: the app's logger masks the order's customer-data keys."""

from __future__ import annotations

import io
import logging
import uuid

from order_domain.logs import get_logger


def test_order_logs_erase_customer_data_at_any_depth():
    stream = io.StringIO()
    logger = get_logger(service=f"order-logs-{uuid.uuid4().hex[:8]}", logger_handler=logging.StreamHandler(stream))

    logger.info("order", extra={"order": {"payment_token": "tok_x", "shipping_address": {"postcode": "N1 1AA"}}})

    (line,) = [line for line in stream.getvalue().splitlines() if line]
    assert "tok_x" not in line and "N1 1AA" not in line
    assert "order" in line
