"""Sandbox carrier: ship, look up and cancel, idempotent per caller key.

A cancel for a key with no shipment records the key as ``cancelled``, so a late ship request
with it is answered ``cancelled`` and nothing ships. A cancel of a shipped parcel cancels it,
unless the parcel was handed over (shipped to :data:`sandbox.HANDED_OVER_COUNTRY`): then the
answer is the shipment unchanged (``shipped``, reason ``handed_over``), as a carrier that can no
longer recall it would answer. Cancelling a rejected or cancelled shipment changes nothing.
"""

from __future__ import annotations

import uuid
from typing import Any

from sandbox import HANDED_OVER_COUNTRY, UNDELIVERABLE_COUNTRY
from sandbox.ledger import Ledger

PROVIDER = "carrier"


def _visible(stored: dict[str, Any], deduplicated: bool) -> dict[str, Any]:
    return {k: v for k, v in {**stored, "deduplicated": deduplicated}.items() if k not in ("pk", "sk")}


def handle(request: dict[str, Any], ledger: Ledger) -> dict[str, Any]:
    """Answer one carrier request and record it in the ledger."""
    action = request.get("action")
    if not request.get("idempotency_key") or action not in ("ship", "get", "cancel"):
        result: dict[str, Any] = {"status": "error", "error": "requests need an idempotency_key and a known action"}
        ledger.record_request(PROVIDER, request, deduplicated=False, outcome="error")
        return result
    if action == "get":
        found = ledger.get_op(PROVIDER, request["idempotency_key"])
        ledger.record_request(PROVIDER, request, deduplicated=False, outcome=str((found or {}).get("status")))
        return _visible(found, False) if found else {"status": "not_found"}
    if action == "cancel":
        cancel = {"action": "ship", "order_id": request.get("order_id"), "status": "cancelled", "reason": "cancelled"}
        stored, created = ledger.put_op(PROVIDER, request["idempotency_key"], cancel)
        if not created and stored.get("status") == "shipped" and not stored.get("handed_over"):
            recalled = {k: v for k, v in stored.items() if k not in ("pk", "sk", "provider", "idempotency_key")}
            stored = ledger.replace_op(
                PROVIDER, request["idempotency_key"], {**recalled, "status": "cancelled", "reason": "cancelled"}
            )
        ledger.record_request(PROVIDER, request, deduplicated=not created, outcome=str(stored.get("status")))
        return _visible(stored, not created)
    country = (request.get("address") or {}).get("country")
    rejected = country == UNDELIVERABLE_COUNTRY
    handed_over = country == HANDED_OVER_COUNTRY
    op = {
        "action": "ship",
        "order_id": request.get("order_id"),
        "status": "rejected" if rejected else "shipped",
        "reason": "undeliverable_address" if rejected else ("handed_over" if handed_over else None),
        "tracking_id": None if rejected else f"trk_{uuid.uuid4().hex[:16]}",
        "handed_over": handed_over,  # a profile flag, not the address (the ledger keeps no address)
    }
    stored, created = ledger.put_op(PROVIDER, request["idempotency_key"], op)
    ledger.record_request(PROVIDER, request, deduplicated=not created, outcome=str(stored.get("status")))
    return _visible(stored, not created)
