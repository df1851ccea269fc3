"""The order message: JSON schema and parsing (Powertools Validation, fastjsonschema)."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import Any

from order_domain.errors import InvalidOrder

#: The producer contract's bounds (README "Message contract"). Every string, array, number and the
#: nesting depth is bounded, so an accepted order has a known worst-case size: about 14 KB as
#: stored JSON (50 items of ~150 bytes, 6 strings of at most 200 characters, 4-byte UTF-8).
MAX_BODY_BYTES = 64 * 1024
#: ``{"items": [{...}]}`` is 3 levels deep; anything deeper is not an order. Checked on the raw
#: text *before* json.loads, whose C decoder recurses once per level (RecursionError at ~1,000).
MAX_NESTING_DEPTH = 4
MAX_ITEMS = 50
MAX_QUANTITY = 1000
MAX_UNIT_PRICE_CENTS = 100_000_000
MAX_PAYMENT_ATTEMPT = 100
#: Order IDs are at most 48 characters so that ``order-<id>-attempt-<N>-repair-<k>`` fits in an
#: execution name (80 characters, [0-9A-Za-z_-]: Step Functions StartExecution API reference).
ORDER_ID_PATTERN = "^[A-Za-z0-9_-]{1,48}$"


def _text(max_length: int) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": max_length}


ORDER_SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["order_id", "customer_id", "items", "payment_token", "shipping_address", "currency"],
    "additionalProperties": False,
    "properties": {
        "order_id": {"type": "string", "pattern": ORDER_ID_PATTERN},
        "customer_id": _text(128),
        "currency": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "payment_token": _text(256),
        "payment_attempt": {"type": "integer", "minimum": 1, "maximum": MAX_PAYMENT_ATTEMPT},
        "items": {
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_ITEMS,
            "items": {
                "type": "object",
                "required": ["sku", "quantity", "unit_price_cents"],
                "properties": {
                    "sku": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
                    "quantity": {"type": "integer", "minimum": 1, "maximum": MAX_QUANTITY},
                    "unit_price_cents": {"type": "integer", "minimum": 0, "maximum": MAX_UNIT_PRICE_CENTS},
                },
                "additionalProperties": False,
            },
        },
        "shipping_address": {
            "type": "object",
            "required": ["name", "line1", "city", "postcode", "country"],
            "additionalProperties": False,
            "properties": {
                "name": _text(200),
                "line1": _text(200),
                "line2": {"type": "string", "maxLength": 200},
                "city": _text(100),
                "postcode": _text(20),
                "country": {"type": "string", "pattern": "^[A-Z]{2}$"},
            },
        },
    },
}

#: A JSON string literal (with escapes), removed before counting brackets.
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]")


def nesting_depth(text: str) -> int:
    """Maximum ``[``/``{`` nesting of a JSON text, without parsing it (no recursion)."""
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    depth = deepest = 0
    for char in brackets:
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def _reject_float(text: str) -> Any:
    del text  # never quoted: the literal is the sender's data (it may be a card number)
    raise InvalidOrder("numbers must be integers, got a number with a fraction or an exponent")


def _reject_constant(text: str) -> Any:
    raise InvalidOrder(f"{text} is not valid JSON")


def parse_order(body: str | bytes | None) -> dict[str, Any]:
    """Parse and validate an order message body; raise :class:`InvalidOrder` (permanent) if bad.

    Checks run cheapest first and before any recursive work: size, nesting depth, then JSON
    (floats, NaN and Infinity refused: integers are integers), then the schema. Error messages
    name the rule and the field, never the value (the body holds customer data).
    """
    if body is None or body == "" or body == b"":
        raise InvalidOrder("empty message body")
    if isinstance(body, bytes):
        try:
            body = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidOrder("body is not valid UTF-8") from exc
    size = len(body.encode("utf-8", "surrogatepass"))
    if size > MAX_BODY_BYTES:
        raise InvalidOrder(f"body is {size} bytes; the limit is {MAX_BODY_BYTES}")
    depth = nesting_depth(body)
    if depth > MAX_NESTING_DEPTH:
        raise InvalidOrder(f"body is nested {depth} levels deep; the limit is {MAX_NESTING_DEPTH}")
    try:
        order = json.loads(body, parse_float=_reject_float, parse_constant=_reject_constant)
    except InvalidOrder:
        raise
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError; so are huge ints
        raise InvalidOrder(f"body is not valid JSON: {type(exc).__name__} at {getattr(exc, 'pos', '?')}") from exc
    if not isinstance(order, dict):
        raise InvalidOrder(f"body must be a JSON object, got {type(order).__name__}")
    from fastjsonschema import JsonSchemaValueException

    try:
        _order_validator()(order)
    except JsonSchemaValueException as exc:
        # Only the rule's message, not chained (a traceback prints the cause): the exception
        # also carries the offending value, which may be a card token or an address.
        raise InvalidOrder(f"order violates the schema: {exc.message}") from None
    return order


@functools.cache
def _order_validator() -> Callable[[Any], Any]:
    """ORDER_SCHEMA compiled once per execution environment, on first use (not at import: cold start).

    Powertools' ``validate()`` calls ``fastjsonschema.validate``, which compiles the schema on
    every call (about 2 ms here, a tenth of intake's CPU per record); the same library's
    ``compile`` gives the same checks and messages once.
    """
    import fastjsonschema

    return fastjsonschema.compile(ORDER_SCHEMA)


def order_total_cents(order: dict[str, Any]) -> int:
    """Sum of quantity x unit price over the order's items."""
    return sum(int(i["quantity"]) * int(i["unit_price_cents"]) for i in order["items"])
