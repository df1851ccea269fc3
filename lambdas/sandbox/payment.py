"""Sandbox payment provider: charge and refund, idempotent per caller key."""

from __future__ import annotations

import uuid
from typing import Any

from botocore.exceptions import ClientError

from sandbox import DECLINE_TOKEN
from sandbox.ledger import Ledger
from shared.aws import client, error_code

PROVIDER = "payment"


def _charge(request: dict[str, Any], ledger: Ledger) -> tuple[dict[str, Any], bool]:
    declined = request.get("payment_token") == DECLINE_TOKEN
    op = {
        "action": "charge",
        "order_id": request["order_id"],
        "amount_cents": int(request["amount_cents"]),
        "currency": request.get("currency", "EUR"),
        "status": "declined" if declined else "captured",
        "reason": "card_declined" if declined else None,
        "payment_id": f"pay_{uuid.uuid4().hex[:16]}",
    }
    stored, created = ledger.put_op(PROVIDER, request["idempotency_key"], op)
    if (
        not created
        and stored.get("action") == "charge"
        and (stored.get("order_id") != op["order_id"] or stored.get("amount_cents") != op["amount_cents"])
    ):
        return {"status": "error", "error": "idempotency_key_reused"}, True
    return stored, not created


def _refund(request: dict[str, Any], ledger: Ledger) -> tuple[dict[str, Any], bool]:
    refund_key, charge_key = request["idempotency_key"], request["charge_idempotency_key"]
    existing = ledger.get_op(PROVIDER, refund_key)
    if existing is not None:
        return existing, True
    charge = ledger.get_op(PROVIDER, charge_key)
    if charge is None:
        # Never charged (or the charge is still in flight): cancel the charge key first, so a
        # late charge with that key is answered "cancelled" instead of moving money.
        _, created = ledger.put_op(
            PROVIDER,
            charge_key,
            {"action": "charge", "order_id": request.get("order_id"), "status": "cancelled", "amount_cents": 0},
        )
        if not created:
            charge = ledger.get_op(PROVIDER, charge_key)
    if charge is None or charge.get("status") != "captured":
        stored, created = ledger.put_op(
            PROVIDER,
            refund_key,
            {"action": "refund", "order_id": request.get("order_id"), "status": "nothing_to_refund", "amount_cents": 0},
        )
        return stored, not created
    refund = {
        "action": "refund",
        "order_id": charge.get("order_id"),
        "status": "refunded",
        "amount_cents": charge["amount_cents"],
        "charge_key": charge_key,
    }
    try:
        client("dynamodb").transact_write_items(
            TransactItems=[
                {
                    "Put": {
                        "TableName": ledger.table_name,
                        "Item": ledger.op_item(PROVIDER, refund_key, refund),
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
                {
                    "Update": {
                        "TableName": ledger.table_name,
                        "Key": {"pk": {"S": f"op#{PROVIDER}#{charge_key}"}, "sk": {"S": "op"}},
                        "UpdateExpression": "SET refunded = :t",
                        "ConditionExpression": "attribute_not_exists(refunded)",
                        "ExpressionAttributeValues": {":t": {"BOOL": True}},
                    }
                },
            ]
        )
        return refund, False
    except ClientError as exc:
        if error_code(exc) != "TransactionCanceledException":
            raise
        again = ledger.get_op(PROVIDER, refund_key)
        if again is not None:
            return again, True
        return {"action": "refund", "status": "already_refunded", "amount_cents": 0}, True


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
        result, dedup = (op or {"status": "not_found"}), False
    else:
        result, dedup = {"status": "error", "error": f"unknown action {action!r}"}, False
    ledger.record_request(PROVIDER, request, deduplicated=dedup, outcome=str(result.get("status")))
    return {k: v for k, v in {**result, "deduplicated": dedup}.items() if k not in ("pk", "sk")}
