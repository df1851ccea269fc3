"""The stuck-order sweeper (EventBridge schedule) against the orders table and its by-status index."""

from __future__ import annotations

import os
import time

import pytest

import lambda_resilience.aws as aws_clients
from order_domain.status import OrderStatus
from order_domain.sweeper import find_stuck

from .conftest import LogCapture, Tables

STUCK_AFTER = 1800
#: What an EventBridge scheduled rule sends (the handler does not read it).
SCHEDULED_EVENT = {
    "version": "0",
    "id": "5e0e4f8e-0000-0000-0000-000000000000",
    "detail-type": "Scheduled Event",
    "source": "aws.events",
    "account": "123456789012",
    "time": "2026-11-21T06:00:00Z",
    "region": "us-east-1",
    "resources": ["arn:aws:events:us-east-1:123456789012:rule/SweepSchedule"],
    "detail": {},
}


@pytest.fixture
def sweeper(load):
    return load("sweeper", STUCK_AFTER_SECONDS=str(STUCK_AFTER))


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def _set_updated_at(tables: Tables, order_id: str, updated_at: str) -> None:
    aws_clients.client("dynamodb").update_item(
        TableName=tables.orders,
        Key=aws_clients.to_item({"order_id": order_id}),
        UpdateExpression="SET updated_at = :u",
        ExpressionAttributeValues=aws_clients.to_item({":u": updated_at}),
    )


@pytest.fixture
def seed_aged(order_factory, seed_order, tables: Tables):
    """``seed_aged(status, age_seconds)``: an order in ``status`` last updated ``age_seconds`` ago."""

    def _seed(status: OrderStatus, age_seconds: float) -> dict:
        order = order_factory()
        seed_order(order, status, correlation_id=f"cid-{order['order_id']}")
        _set_updated_at(tables, order["order_id"], _iso(time.time() - age_seconds))
        return order

    return _seed


def _stuck_metric_blobs(logs: LogCapture) -> list[dict]:
    logs.read()
    return [blob for blob in logs.metric_blobs if "StuckOrders" in blob]


def _values(value: float | list[float]) -> list[float]:
    """An EMF metric value is a number or a list of numbers."""
    return value if isinstance(value, list) else [value]


def test_sweeper_finds_old_non_terminal_orders_ignores_terminal_and_fresh(
    sweeper, seed_aged, lambda_context, logs: LogCapture
):
    stuck = [
        seed_aged(OrderStatus.RECEIVED, 2 * 3600),
        seed_aged(OrderStatus.INVENTORY_RESERVED, STUCK_AFTER + 60),
        seed_aged(OrderStatus.PAYMENT_CHARGED, 3 * 3600),
        seed_aged(OrderStatus.SHIPPED, 5 * 3600),
        seed_aged(OrderStatus.COMPENSATING, 24 * 3600),
    ]
    terminal = [seed_aged(s, 48 * 3600) for s in (OrderStatus.COMPLETED, OrderStatus.COMPENSATED)]
    terminal.append(seed_aged(OrderStatus.NEEDS_ATTENTION, 48 * 3600))  # the alarmed queue covers it
    fresh = [seed_aged(OrderStatus.RECEIVED, 60), seed_aged(OrderStatus.COMPENSATING, STUCK_AFTER - 120)]

    result = sweeper(SCHEDULED_EVENT, lambda_context)

    assert sorted(result["stuck"]) == sorted(o["order_id"] for o in stuck)
    assert not {o["order_id"] for o in terminal + fresh} & set(result["stuck"])
    # one warning per stuck order, under that order's own correlation ID
    warnings = logs.find("stuck order")
    assert {(w["order_id"], w["correlation_id"], w["level"]) for w in warnings} == {
        (o["order_id"], f"cid-{o['order_id']}", "WARNING") for o in stuck
    }
    assert {w["status"] for w in warnings} == {
        "RECEIVED",
        "INVENTORY_RESERVED",
        "PAYMENT_CHARGED",
        "SHIPPED",
        "COMPENSATING",
    }
    (done,) = logs.find("sweep done")
    assert (done["stuck"], done["threshold_seconds"]) == (5, STUCK_AFTER)


def test_sweeper_publishes_stuck_orders_metric_with_service_dimension(
    sweeper, seed_aged, lambda_context, logs: LogCapture
):
    seed_aged(OrderStatus.RECEIVED, 2 * 3600)
    seed_aged(OrderStatus.SHIPPED, 2 * 3600)
    seed_aged(OrderStatus.COMPLETED, 2 * 3600)

    sweeper(SCHEDULED_EVENT, lambda_context)

    (blob,) = _stuck_metric_blobs(logs)
    assert _values(blob["StuckOrders"]) == [2]  # one data point per sweep
    assert blob["service"] == "sweeper"  # the StuckOrdersAlarm's dimension
    (directive,) = blob["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == os.environ["POWERTOOLS_METRICS_NAMESPACE"]
    assert ["service"] in directive["Dimensions"]
    assert {"Name": "StuckOrders", "Unit": "Count"} in directive["Metrics"]
    assert logs.metric_total("StuckOrders") == 2


def test_sweeper_with_nothing_stuck_publishes_zero(sweeper, seed_aged, lambda_context, logs: LogCapture):
    """A zero data point every sweep: the alarm returns to OK once the orders are repaired."""
    seed_aged(OrderStatus.RECEIVED, 30)
    seed_aged(OrderStatus.COMPLETED, 2 * 3600)

    assert sweeper(SCHEDULED_EVENT, lambda_context) == {"stuck": []}

    (blob,) = _stuck_metric_blobs(logs)
    assert _values(blob["StuckOrders"]) == [0]
    assert logs.find("stuck order") == []


def test_sweeper_threshold_comes_from_stuck_after_seconds(load, seed_aged, lambda_context, logs: LogCapture):
    five_minutes_old = seed_aged(OrderStatus.PAYMENT_CHARGED, 300)

    assert load("sweeper", STUCK_AFTER_SECONDS="1800")(SCHEDULED_EVENT, lambda_context) == {"stuck": []}
    assert load("sweeper", STUCK_AFTER_SECONDS="60")(SCHEDULED_EVENT, lambda_context) == {
        "stuck": [five_minutes_old["order_id"]]
    }


def test_sweeper_find_stuck_cutoff_is_exclusive(order_factory, seed_order, tables: Tables):
    """updated_at exactly at the cutoff is not stuck yet; one second older is."""
    now = time.time()
    at_cutoff, older = order_factory(), order_factory()
    for order, age in ((at_cutoff, STUCK_AFTER), (older, STUCK_AFTER + 1)):
        seed_order(order, OrderStatus.RECEIVED)
        _set_updated_at(tables, order["order_id"], _iso(now - age))

    found = find_stuck(tables.orders, STUCK_AFTER, now=now)

    assert [o["order_id"] for o in found] == [older["order_id"]]
    # read from the index: keys plus the projected correlation_id only
    assert set(found[0]) == {"order_id", "status", "updated_at", "correlation_id"}
