"""Sandbox carrier: ship, idempotent per caller key."""

from __future__ import annotations

import uuid
from typing import Any

from sandbox import UNDELIVERABLE_COUNTRY
from sandbox.ledger import Ledger

PROVIDER = "carrier"


def handle(request: dict[str, Any], ledger: Ledger) -> dict[str, Any]:
    """Answer one carrier request and record it in the ledger."""
    if not request.get("idempotency_key") or request.get("action") != "ship":
        result: dict[str, Any] = {"status": "error", "error": "ship requests need an idempotency_key"}
        ledger.record_request(PROVIDER, request, deduplicated=False, outcome="error")
        return result
    country = (request.get("address") or {}).get("country")
    rejected = country == UNDELIVERABLE_COUNTRY
    op = {
        "action": "ship",
        "order_id": request.get("order_id"),
        "status": "rejected" if rejected else "shipped",
        "reason": "undeliverable_address" if rejected else None,
        "tracking_id": None if rejected else f"trk_{uuid.uuid4().hex[:16]}",
    }
    stored, created = ledger.put_op(PROVIDER, request["idempotency_key"], op)
    ledger.record_request(PROVIDER, request, deduplicated=not created, outcome=str(stored.get("status")))
    return {k: v for k, v in {**stored, "deduplicated": not created}.items() if k not in ("pk", "sk")}
