"""Sandbox payment provider: charge and refund/void, idempotent per caller key.

A charge ends ``captured``, ``partially_captured``, ``authorized`` (held, not captured),
``declined`` or ``cancelled`` (a refund arrived before the charge). A refund names the charge's
idempotency key and the provider resolves the charge's state by it before moving money:
captured or partly captured -> refund what was captured; authorised -> void the hold;
absent -> cancel the key (a late charge is then answered ``cancelled``); anything else ->
nothing to refund. Each charge is refunded at most once, whatever refund key asks.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from botocore.exceptions import ClientError

from lambda_resilience.aws import cancelled_only_by_conditions, error_code
from sandbox import PENDING_REFUND_PROFILES, REFUND_FLAKY_FAILURES, REFUND_SETTLE_SECONDS, token_profile
from sandbox.ledger import Ledger

PROVIDER = "payment"
MONEY_MOVED = ("captured", "partially_captured")


def _charge(request: dict[str, Any], ledger: Ledger) -> tuple[dict[str, Any], bool]:
    profile = token_profile(request.get("payment_token"))
    amount = int(request["amount_cents"])
    status, captured, reason = "captured", amount, None
    if profile == "decline":
        status, captured, reason = "declined", 0, "card_declined"
    elif profile == "partial_capture":
        status, captured, reason = "partially_captured", amount // 2, "insufficient_funds_for_full_capture"
    elif profile == "auth_only":
        status, captured, reason = "authorized", 0, "capture_failed"
    op = {
        "action": "charge",
        "order_id": request["order_id"],
        "amount_cents": amount,
        "captured_cents": captured,
        "currency": request.get("currency", "EUR"),
        "token_profile": profile,  # never the token itself
        "status": status,
        "reason": reason,
        "payment_id": f"pay_{uuid.uuid4().hex[:16]}",
    }
    stored, created = ledger.put_op(PROVIDER, request["idempotency_key"], op)
    if (
        not created
        and stored.get("status") != "cancelled"
        and (stored.get("order_id") != op["order_id"] or stored.get("amount_cents") != op["amount_cents"])
    ):
        return {"status": "error", "error": "idempotency_key_reused"}, True
    return stored, not created


def _refund_failure(charge: dict[str, Any] | None, refund_key: str, ledger: Ledger) -> dict[str, Any] | None:
    """Injected provider outages for refunds, decided by the charge's token profile."""
    profile = (charge or {}).get("token_profile")
    if profile == "refund_broken":
        return {"status": "error", "error": "provider_unavailable"}
    if profile == "refund_flaky" and ledger.count_requests(PROVIDER, refund_key) < REFUND_FLAKY_FAILURES:
        return {"status": "error", "error": "provider_unavailable"}
    return None


def _settle(ledger: Ledger, refund_key: str, refund: dict[str, Any], charge_key: str, *, void: bool) -> bool:
    """Write the refund op and mark the charge refunded (and voided) in one transaction.

    False if either already happened (the conditions failed); throttling or a conflicting
    transaction raises, so the caller sees a provider error and retries.
    """
    update: dict[str, Any] = {
        "TableName": ledger.table_name,
        "Key": {"pk": {"S": f"op#{PROVIDER}#{charge_key}"}, "sk": {"S": "op"}},
        "UpdateExpression": "SET refunded = :t",
        "ConditionExpression": "attribute_not_exists(refunded)",
        "ExpressionAttributeValues": {":t": {"BOOL": True}},
    }
    if void:
        update["UpdateExpression"] += ", #s = :voided"
        update["ExpressionAttributeNames"] = {"#s": "status"}
        update["ExpressionAttributeValues"][":voided"] = {"S": "voided"}
    put = {
        "TableName": ledger.table_name,
        "Item": ledger.op_item(PROVIDER, refund_key, refund),
        "ConditionExpression": "attribute_not_exists(pk)",
    }
    try:
        ledger.client.transact_write_items(TransactItems=[{"Put": put}, {"Update": update}])
        return True
    except ClientError as exc:
        if error_code(exc) != "TransactionCanceledException" or not cancelled_only_by_conditions(exc):
            raise
        return False


def _refund(request: dict[str, Any], ledger: Ledger) -> tuple[dict[str, Any], bool]:
    refund_key, charge_key = request["idempotency_key"], request["charge_idempotency_key"]
    existing = ledger.get_op(PROVIDER, refund_key)
    if existing is not None:
        return existing, True
    charge = ledger.get_op(PROVIDER, charge_key)
    failure = _refund_failure(charge, refund_key, ledger)
    if failure is not None:
        return failure, False
    if charge is None:
        # Never charged, or the charge is still in flight: cancel the key so a late charge
        # with it is answered "cancelled" instead of moving money.
        cancel = {"action": "charge", "order_id": request.get("order_id"), "status": "cancelled", "amount_cents": 0}
        _, created = ledger.put_op(PROVIDER, charge_key, {**cancel, "captured_cents": 0})
        if not created:
            charge = ledger.get_op(PROVIDER, charge_key)
    order_id = (charge or {}).get("order_id", request.get("order_id"))
    status = (charge or {}).get("status")
    moved = charge is not None and status in MONEY_MOVED and int(charge.get("captured_cents", 0)) > 0
    if not moved and not (charge is not None and status == "authorized"):
        stored, created = ledger.put_op(
            PROVIDER,
            refund_key,
            {"action": "refund", "order_id": order_id, "status": "nothing_to_refund", "amount_cents": 0},
        )
        return stored, not created
    refund = {
        "action": "refund",
        "order_id": order_id,
        "status": "refunded" if moved else "voided",  # an authorisation is voided: no money moved
        "amount_cents": int(charge["captured_cents"]) if moved and charge else 0,
        "charge_key": charge_key,
    }
    settles_as = PENDING_REFUND_PROFILES.get(str((charge or {}).get("token_profile")))
    if moved and settles_as is not None:
        refund.update(status="pending", settles_as=settles_as, settles_at=int(time.time()) + REFUND_SETTLE_SECONDS)
    if _settle(ledger, refund_key, refund, charge_key, void=not moved):
        return refund, False
    again = ledger.get_op(PROVIDER, refund_key)
    return (again, True) if again else ({"action": "refund", "status": "already_refunded", "amount_cents": 0}, True)


def _settlement_view(op: dict[str, Any]) -> dict[str, Any]:
    """A refund answered ``pending``, as a lookup sees it now: ``settlement`` pending until ``settles_at``, then
    its final state, with ``settled_at`` (the provider's time of the state: an older one never wins)."""
    if op.get("action") != "refund" or "settles_at" not in op:
        return op
    due = int(op["settles_at"])
    if time.time() < due:
        return {**op, "settlement": "pending", "settled_at": 0}
    return {**op, "settlement": str(op["settles_as"]), "settled_at": due}


def handle(request: dict[str, Any], ledger: Ledger) -> dict[str, Any]:
    """Answer one provider request and record it in the ledger."""
    action = request.get("action")
    if not request.get("idempotency_key"):
        result, dedup = {"status": "error", "error": "idempotency_key_required"}, False
    elif action == "charge":
        result, dedup = _charge(request, ledger)
    elif action == "refund":
        result, dedup = _refund(request, ledger)
    elif action == "get":
        op = ledger.get_op(PROVIDER, request["idempotency_key"])
        result, dedup = (_settlement_view(op) if op else {"status": "not_found"}), False
    else:
        result, dedup = {"status": "error", "error": f"unknown action {action!r}"}, False
    ledger.record_request(PROVIDER, request, deduplicated=dedup, outcome=str(result.get("status")))
    hidden = ("pk", "sk", "payment_token", "token_profile", "settles_as", "settles_at")
    return {k: v for k, v in {**result, "deduplicated": dedup}.items() if k not in hidden}
