"""Idempotency keyed by business identity, on Powertools' idempotency utility.

Usage::

    operation = IdempotentOperation(table_name, ttl_seconds=86400, logger=logger)

    @operation
    def charge(command):  # command = {"idempotency_key": "order-1#charge#attempt-1", "payload": {...}}
        ...

    charge({"idempotency_key": business_key("order-1", "charge"), "payload": {...}}, lambda_context)
"""

from lambda_resilience.idempotency.config import (
    DEFAULT_IN_PROGRESS_CEILING_SECONDS,
    DEFAULT_IN_PROGRESS_FLOOR_SECONDS,
    KEY_FIELD,
    PAYLOAD_FIELD,
    InProgressExpiry,
    business_key,
)
from lambda_resilience.idempotency.operation import IdempotentOperation

__all__ = [
    "DEFAULT_IN_PROGRESS_CEILING_SECONDS",
    "DEFAULT_IN_PROGRESS_FLOOR_SECONDS",
    "KEY_FIELD",
    "PAYLOAD_FIELD",
    "IdempotentOperation",
    "InProgressExpiry",
    "business_key",
]
