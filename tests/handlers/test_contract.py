"""The producer contract's bounds keep every accepted order inside AWS's limits (README "Limits")."""

from __future__ import annotations

import json
from typing import Any

from order_domain.model import MAX_BODY_BYTES, MAX_ITEMS, MAX_PAYMENT_ATTEMPT, parse_order
from order_domain.saga_start import execution_name, saga_input
from order_domain.step import MAX_ERROR_CHARS

DYNAMODB_ITEM_LIMIT = 400 * 1024  # DynamoDB Developer Guide, "Quotas in Amazon DynamoDB" (400 KB)
SFN_PAYLOAD_LIMIT = 256 * 1024  # Step Functions Developer Guide, service quotas (256 KiB)
EXECUTION_NAME_LIMIT = 80  # Step Functions API reference, StartExecution


def _largest_order() -> dict[str, Any]:
    wide = "\U0001f4e6"  # 4 bytes of UTF-8 per character: the worst case for every string bound
    return {
        "order_id": "o" * 48,
        "customer_id": wide * 128,
        "currency": "EUR",
        "payment_token": wide * 256,
        "payment_attempt": MAX_PAYMENT_ATTEMPT,
        "items": [
            {"sku": f"{i:02d}" + "S" * 62, "quantity": 1000, "unit_price_cents": 100_000_000} for i in range(MAX_ITEMS)
        ],
        "shipping_address": {
            "name": wide * 200,
            "line1": wide * 200,
            "line2": wide * 200,
            "city": wide * 100,
            "postcode": wide * 20,
            "country": "GB",
        },
    }


def _item_bytes(item: dict[str, Any]) -> int:
    """An upper bound of DynamoDB's item size: names + JSON-encoded values, UTF-8."""
    return len(json.dumps(item, ensure_ascii=False).encode())


def test_contract_largest_valid_order_is_accepted_and_fits_the_body_limit():
    body = json.dumps(_largest_order(), ensure_ascii=False)

    assert parse_order(body)["order_id"] == "o" * 48
    assert len(body.encode()) <= MAX_BODY_BYTES


def test_contract_order_item_after_every_attempt_fits_dynamodb():
    order = _largest_order()
    error = {"Error": "E" * 256, "Cause": "C" * MAX_ERROR_CHARS, "correlation_id": "c" * 128}
    entry = {"status": "INVENTORY_RESERVED", "at": "2026-11-21T00:00:00Z", "attempt": 100}
    item = {
        "order_id": order["order_id"],
        "status": "COMPENSATED",
        "payment_attempt": MAX_PAYMENT_ATTEMPT,
        "correlation_id": "c" * 128,
        "order": order,
        "created_at": entry["at"],
        "updated_at": entry["at"],
        "last_error": error,
        # Every attempt walks at most 8 statuses and records how the previous one ended.
        "history": [entry] * (8 * MAX_PAYMENT_ATTEMPT),
        "attempts": [
            {
                "attempt": n,
                "received_at": entry["at"],
                "correlation_id": "c" * 128,
                "previous_outcome": "COMPENSATED",
                "previous_error": error,
            }
            for n in range(1, MAX_PAYMENT_ATTEMPT + 1)
        ],
    }

    assert _item_bytes(item) < DYNAMODB_ITEM_LIMIT


def test_contract_saga_input_and_execution_name_fit_step_functions():
    name = execution_name("o" * 48, MAX_PAYMENT_ATTEMPT) + "-repair-99"
    payload = json.dumps(saga_input("o" * 48, MAX_PAYMENT_ATTEMPT, "c" * 128))

    assert len(name) <= EXECUTION_NAME_LIMIT
    assert len(payload.encode()) < 1024 < SFN_PAYLOAD_LIMIT
