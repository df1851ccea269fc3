"""The order pipeline's logger: the middleware's safe logger, masking this app's customer-data keys."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from lambda_resilience.logs import get_logger as safe_logger

#: Keys whose values are customer data wherever they appear in a log record (at any depth).
SENSITIVE_KEYS = frozenset(
    {
        "payment_token",
        "card_number",
        "cvc",
        "shipping_address",
        "address",
        "name",
        "customer_name",
        "line1",
        "line2",
        "postcode",
    }
)


def get_logger(**kwargs: Any) -> Logger:
    """A Powertools Logger: JSON lines, customer data erased, no line over 16 KB."""
    return safe_logger(sensitive_keys=SENSITIVE_KEYS, **kwargs)
