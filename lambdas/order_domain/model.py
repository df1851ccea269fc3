"""The order message: JSON schema and parsing (Powertools Validation, fastjsonschema)."""

from __future__ import annotations

import json
from typing import Any

from shared.exceptions import InvalidOrder

ORDER_SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["order_id", "customer_id", "items", "payment_token", "shipping_address", "currency"],
    "properties": {
        # Execution names allow [0-9A-Za-z_-], 80 chars: the order ID must fit in one.
        "order_id": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
        "customer_id": {"type": "string", "minLength": 1, "maxLength": 128},
        "currency": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "payment_token": {"type": "string", "minLength": 1, "maxLength": 256},
        "payment_attempt": {"type": "integer", "minimum": 1, "maximum": 100},
        "items": {
            "type": "array",
            "minItems": 1,
            "maxItems": 50,
            "items": {
                "type": "object",
                "required": ["sku", "quantity", "unit_price_cents"],
                "properties": {
                    "sku": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
                    "quantity": {"type": "integer", "minimum": 1, "maximum": 1000},
                    "unit_price_cents": {"type": "integer", "minimum": 0, "maximum": 100000000},
                },
                "additionalProperties": False,
            },
        },
        "shipping_address": {
            "type": "object",
            "required": ["name", "line1", "city", "postcode", "country"],
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "line1": {"type": "string", "minLength": 1},
                "city": {"type": "string", "minLength": 1},
                "postcode": {"type": "string", "minLength": 1},
                "country": {"type": "string", "pattern": "^[A-Z]{2}$"},
            },
        },
    },
}


def parse_order(body: str | bytes | None) -> dict[str, Any]:
    """Parse and validate an order message body; raise :class:`InvalidOrder` (permanent) if bad."""
    if body is None or body == "" or body == b"":
        raise InvalidOrder("empty message body")
    try:
        order = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidOrder(f"body is not valid JSON: {exc}") from exc
    # Imported on first use: fastjsonschema is not needed to import the handler (cold start).
    from aws_lambda_powertools.utilities.validation import SchemaValidationError, validate

    try:
        validate(event=order, schema=ORDER_SCHEMA)
    except SchemaValidationError as exc:
        raise InvalidOrder(f"order violates the schema: {exc}") from exc
    return dict(order)


def order_total_cents(order: dict[str, Any]) -> int:
    """Sum of quantity x unit price over the order's items."""
    return sum(int(i["quantity"]) * int(i["unit_price_cents"]) for i in order["items"])
