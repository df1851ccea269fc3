"""Deterministic test orders: a seed decides which ones are declined, undeliverable or out of stock."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

# Mirrors lambdas/sandbox/__init__.py (the sandbox decides outcomes from the order itself).
DECLINE_TOKEN = "tok_decline"
UNDELIVERABLE_COUNTRY = "ZZ"
OUT_OF_STOCK_SKU = "SKU-DISCONTINUED"
STOCKED_SKUS = ("SKU-APPLE", "SKU-BREAD", "SKU-CHEESE", "SKU-DATES", "SKU-EGGS")
INITIAL_STOCK = 1_000_000


@dataclass(frozen=True)
class OrderMix:
    """Rates of orders that fail at each saga step (decided per order by the seeded RNG)."""

    decline_rate: float = 0.15
    ship_fail_rate: float = 0.10
    out_of_stock_rate: float = 0.05
    missing_correlation_rate: float = 0.2

    def __post_init__(self) -> None:
        for name in ("decline_rate", "ship_fail_rate", "out_of_stock_rate", "missing_correlation_rate"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be within 0..1, got {value}")


def make_orders(count: int, seed: int, mix: OrderMix) -> list[tuple[dict[str, Any], str | None]]:
    """``count`` (order, correlation_id or None) pairs; None means intake must mint the ID."""
    if count < 1:
        raise ValueError("count must be >= 1")
    rng = random.Random(seed)
    out: list[tuple[dict[str, Any], str | None]] = []
    for i in range(count):
        items = [
            {"sku": rng.choice(STOCKED_SKUS), "quantity": rng.randint(1, 3), "unit_price_cents": rng.randint(100, 5000)}
            for _ in range(rng.randint(1, 3))
        ]
        roll = rng.random()
        token, country = "tok_visa", "DE"
        if roll < mix.out_of_stock_rate:
            items.append({"sku": OUT_OF_STOCK_SKU, "quantity": 1, "unit_price_cents": 999})
        elif roll < mix.out_of_stock_rate + mix.decline_rate:
            token = DECLINE_TOKEN
        elif roll < mix.out_of_stock_rate + mix.decline_rate + mix.ship_fail_rate:
            country = UNDELIVERABLE_COUNTRY
        order = {
            "order_id": f"order-{seed}-{i:05d}",
            "customer_id": f"cust-{rng.randint(1, 500)}",
            "currency": "EUR",
            "payment_token": token,
            "items": items,
            "shipping_address": {
                "name": "A. Customer",
                "line1": "1 Main St",
                "city": "Berlin",
                "postcode": "10115",
                "country": country,
            },
        }
        correlation_id = (
            None if rng.random() < mix.missing_correlation_rate else f"cid-{seed}-{i:05d}-{rng.getrandbits(32):08x}"
        )
        out.append((order, correlation_id))
    return out
