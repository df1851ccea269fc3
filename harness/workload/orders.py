"""Deterministic test orders: a seed decides which ones fail, where, and how.

Outcomes are decided by the order itself, as the sandbox providers read it
(lambdas/sandbox/__init__.py): the payment token's prefix and the shipping country.
Each order carries its own token, customer name and address line (``tok_ok_<hex>``,
``Name-<hex>``, ``Line-<hex> Main St``, the hex derived from the order ID), so a leak of
any of them into logs, execution histories or DLQ attributes can be found (:data:`PII_PATTERN`).
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass, fields
from typing import Any

from ops.errors import InvalidRates

OK_TOKEN = "tok_ok"
DECLINE_TOKEN = "tok_decline"
PARTIAL_CAPTURE_TOKEN = "tok_partial"
AUTH_ONLY_TOKEN = "tok_auth_only"
REFUND_FLAKY_TOKEN = "tok_refund_flaky"
REFUND_BROKEN_TOKEN = "tok_refund_broken"
UNDELIVERABLE_COUNTRY = "ZZ"
OUT_OF_STOCK_SKU = "SKU-DISCONTINUED"
STOCKED_SKUS = ("SKU-APPLE", "SKU-BREAD", "SKU-CHEESE", "SKU-DATES", "SKU-EGGS")
INITIAL_STOCK = 1_000_000
#: Length of the per-order marker in tokens, names and address lines.
MARKER_HEX = 12
#: What a generated order's payment token, customer name or address line looks like.
PII_PATTERN = re.compile(rf"(?:tok_[a-z_]+_|Name-|Line-)[0-9a-f]{{{MARKER_HEX}}}")


def option_name(field_name: str) -> str:
    """The ``ops local run`` option for a rate field: ``decline_rate`` / ``decline`` -> ``--decline-rate``."""
    name = field_name if field_name.endswith("_rate") else f"{field_name}_rate"
    return "--" + name.replace("_", "-")


def check_rates(rates: Any) -> None:
    """Every field of the dataclass ``rates`` must be a rate within 0..1."""
    for f in fields(rates):
        value = getattr(rates, f.name)
        if not 0.0 <= value <= 1.0:
            raise InvalidRates(f"{option_name(f.name)} must be within 0..1, got {value}")


@dataclass(frozen=True)
class OrderMix:
    """Share of orders of each failing kind (decided per order by the seeded RNG); the rest complete.

    Attributes:
        out_of_stock_rate: an unstocked SKU -> ReserveInventory fails -> compensated.
        decline_rate: payment declined -> compensated (stock released).
        ship_fail_rate: undeliverable address -> refund, release -> compensated.
        partial_capture_rate: half the amount captured -> refund what moved -> compensated.
        auth_only_rate: authorised, never captured -> void -> compensated.
        refund_flaky_rate: undeliverable, and the refund fails twice before succeeding -> compensated.
        refund_fail_rate: undeliverable, and every refund fails -> NEEDS_ATTENTION.
        missing_correlation_rate: the producer sends no correlation ID (intake mints one).
    """

    out_of_stock_rate: float = 0.05
    decline_rate: float = 0.15
    ship_fail_rate: float = 0.10
    partial_capture_rate: float = 0.0
    auth_only_rate: float = 0.0
    refund_flaky_rate: float = 0.0
    refund_fail_rate: float = 0.0
    missing_correlation_rate: float = 0.2

    def __post_init__(self) -> None:
        check_rates(self)
        shares = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "missing_correlation_rate"}
        if sum(shares.values()) > 1.0:
            terms = " + ".join(f"{option_name(name)} {value:g}" for name, value in shares.items() if value)
            raise InvalidRates(
                f"the order mix adds up to more than 1 ({terms} = {sum(shares.values()):g}); "
                "each order takes at most one failure: lower some of these rates"
            )


KINDS = (
    "out_of_stock",
    "declined",
    "undeliverable",
    "partial_capture",
    "auth_only",
    "refund_flaky",
    "refund_fails",
)


def _kind(roll: float, mix: OrderMix) -> str:
    rates = (
        mix.out_of_stock_rate,
        mix.decline_rate,
        mix.ship_fail_rate,
        mix.partial_capture_rate,
        mix.auth_only_rate,
        mix.refund_flaky_rate,
        mix.refund_fail_rate,
    )
    edge = 0.0
    for kind, rate in zip(KINDS, rates, strict=True):
        edge += rate
        if roll < edge:
            return kind
    return "ok"


def order_kind(order: dict[str, Any]) -> str:
    """Which failure (if any) an order carries: read back from its content."""
    token, country = str(order["payment_token"]), order["shipping_address"]["country"]
    if any(i["sku"] == OUT_OF_STOCK_SKU for i in order["items"]):
        return "out_of_stock"
    by_token = {
        DECLINE_TOKEN: "declined",
        PARTIAL_CAPTURE_TOKEN: "partial_capture",
        AUTH_ONLY_TOKEN: "auth_only",
        REFUND_FLAKY_TOKEN: "refund_flaky",
        REFUND_BROKEN_TOKEN: "refund_fails",
    }
    for prefix, kind in by_token.items():
        if token.startswith(prefix):
            return kind
    return "undeliverable" if country == UNDELIVERABLE_COUNTRY else "ok"


def expected_status(kind: str) -> str:
    return {"ok": "COMPLETED", "refund_fails": "NEEDS_ATTENTION"}.get(kind, "COMPENSATED")


def marker(order_id: str) -> str:
    """The order's own hex marker (from its ID: the RNG sequence, and so the mix, stays as it was)."""
    return hashlib.sha256(order_id.encode()).hexdigest()[:MARKER_HEX]


def make_order(order_id: str, rng: random.Random, kind: str = "ok") -> dict[str, Any]:
    """A valid order of ``kind`` with its own token, customer name and address line."""
    items = [
        {"sku": rng.choice(STOCKED_SKUS), "quantity": rng.randint(1, 3), "unit_price_cents": rng.randint(100, 5000)}
        for _ in range(rng.randint(1, 3))
    ]
    token, country = OK_TOKEN, "DE"
    if kind == "out_of_stock":
        items.append({"sku": OUT_OF_STOCK_SKU, "quantity": 1, "unit_price_cents": 999})
    elif kind == "declined":
        token = DECLINE_TOKEN
    elif kind == "undeliverable":
        country = UNDELIVERABLE_COUNTRY
    elif kind == "partial_capture":
        token = PARTIAL_CAPTURE_TOKEN
    elif kind == "auth_only":
        token = AUTH_ONLY_TOKEN
    elif kind == "refund_flaky":
        token, country = REFUND_FLAKY_TOKEN, UNDELIVERABLE_COUNTRY
    elif kind == "refund_fails":
        token, country = REFUND_BROKEN_TOKEN, UNDELIVERABLE_COUNTRY
    hex_marker = marker(order_id)
    return {
        "order_id": order_id,
        "customer_id": f"cust-{rng.randint(1, 500)}",
        "currency": "EUR",
        "payment_token": f"{token}_{hex_marker}",
        "items": items,
        "shipping_address": {
            "name": f"Name-{hex_marker}",
            "line1": f"Line-{hex_marker} Main St",
            "city": "Berlin",
            "postcode": "10115",
            "country": country,
        },
    }


def make_orders(count: int, seed: int, mix: OrderMix) -> list[tuple[dict[str, Any], str | None]]:
    """``count`` (order, correlation_id or None) pairs; None means intake must mint the ID."""
    if count < 1:
        raise ValueError("count must be >= 1")
    rng = random.Random(seed)
    out: list[tuple[dict[str, Any], str | None]] = []
    for i in range(count):
        kind = _kind(rng.random(), mix)
        order = make_order(f"order-{seed}-{i:05d}", rng, kind)
        correlation_id = (
            None if rng.random() < mix.missing_correlation_rate else f"cid-{seed}-{i:05d}-{rng.getrandbits(32):08x}"
        )
        out.append((order, correlation_id))
    return out
