"""The local run's report, counted from the tables, queues and sandbox ledger (not from handler bookkeeping)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from local_cloud.clients import aws as _client
from local_cloud.tables import scan_all

TERMINAL = ("COMPLETED", "COMPENSATED", "NEEDS_ATTENTION")


#: What the report reads of an order item.
ORDER_SUMMARY_ATTRIBUTES = ("order_id", "status", "correlation_id", "payment_attempt", "created_at", "updated_at")


def order_statuses(orders_table: str) -> dict[str, dict[str, Any]]:
    """``{order_id: {order_id, status, correlation_id, payment_attempt, created_at, updated_at}}``."""
    return {item["order_id"]: item for item in scan_all(orders_table, ORDER_SUMMARY_ATTRIBUTES)}


def ledger_summary(ledger_table: str, inventory_table: str, orders: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Side effects as the sandbox providers saw them."""
    ledger = scan_all(ledger_table)
    ops = [i for i in ledger if i.get("sk") == "op"]
    requests = [i for i in ledger if str(i.get("pk", "")).startswith("req#")]
    captured: dict[str, int] = defaultdict(int)
    refunded: dict[str, int] = defaultdict(int)
    shipped: dict[str, int] = defaultdict(int)
    for op in ops:
        oid = str(op.get("order_id"))
        if op.get("action") == "charge" and op.get("status") in ("captured", "partially_captured"):
            captured[oid] += 1
        elif op.get("action") == "refund" and op.get("status") == "refunded":
            refunded[oid] += 1
        elif op.get("action") == "ship" and op.get("status") == "shipped":
            shipped[oid] += 1
    reservations = [i for i in scan_all(inventory_table) if str(i.get("pk", "")).startswith("reservation#")]
    outstanding = [
        r
        for r in reservations
        if r.get("status") == "RESERVED" and orders.get(str(r.get("order_id")), {}).get("status") != "COMPLETED"
    ]
    return {
        "charges": sum(captured.values()),
        "duplicate_charges": sum(1 for n in captured.values() if n > 1),
        "duplicate_charge_requests": sum(
            1 for r in requests if r.get("action") == "charge" and r.get("deduplicated") is True
        ),
        "refunds": sum(refunded.values()),
        "duplicate_refunds": sum(1 for n in refunded.values() if n > 1),
        "refunds_without_charge": sum(1 for oid in refunded if captured.get(oid, 0) == 0),
        "shipments": sum(shipped.values()),
        "duplicate_shipments": sum(1 for n in shipped.values() if n > 1),
        "charged_without_shipment_or_refund": sorted(
            oid for oid, n in captured.items() if n and not shipped.get(oid) and not refunded.get(oid)
        ),
        "reservations_outstanding": len(outstanding),
        "reservations_outstanding_orders": sorted(
            f"{r.get('order_id')}:{orders.get(str(r.get('order_id')), {}).get('status', 'NOT_ACCEPTED')}"
            for r in outstanding
        ),
        "provider_requests": len(requests),
    }


def dlq_depths(queues: dict[str, dict[str, str]], dlq_ids: set[str]) -> dict[str, int]:
    sqs = _client("sqs")
    out = {}
    for lid in sorted(dlq_ids):
        attrs = sqs.get_queue_attributes(
            QueueUrl=queues[lid]["url"],
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        out[queues[lid]["name"]] = int(attrs["ApproximateNumberOfMessages"]) + int(
            attrs["ApproximateNumberOfMessagesNotVisible"]
        )
    return out


def log_summary(logs: list[dict[str, Any]]) -> dict[str, Any]:
    missing = [line for line in logs if not line.get("correlation_id")]
    return {
        "lines": len(logs),
        "without_correlation_id": len(missing),
        "errors": sum(1 for line in logs if line.get("level") == "ERROR"),
        "by_service": dict(Counter(str(line.get("service")) for line in logs)),
    }


def metric_totals(emf_docs: list[dict[str, Any]]) -> dict[str, float]:
    totals: dict[str, float] = defaultdict(float)
    for doc in emf_docs:
        for directive in doc.get("_aws", {}).get("CloudWatchMetrics", []):
            for metric in directive.get("Metrics", []):
                value = doc.get(metric["Name"], 0)
                totals[metric["Name"]] += sum(value) if isinstance(value, list) else float(value)
    return dict(totals)
