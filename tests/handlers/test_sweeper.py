"""The stuck-order sweeper (EventBridge schedule) against the orders table and its by-status index."""

from __future__ import annotations

import inspect
import os
import threading
import time

import pytest

import lambda_resilience.aws as aws_clients
from lambda_resilience.testing import FakeLambdaContext
from order_domain.model import order_total_cents
from order_domain.reconcile_sizing import CAPACITY
from order_domain.status import OrderStatus
from order_domain.sweeper import RESERVE_SECONDS, find_stuck

from .conftest import CARRIER_FUNCTION, PAYMENT_FUNCTION, FakeLambdaClient, LogCapture, NeedsAttentionQueue, Tables

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
def sweeper(load, providers):
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

    assert sweeper(SCHEDULED_EVENT, lambda_context)["stuck"] == []

    (blob,) = _stuck_metric_blobs(logs)
    assert _values(blob["StuckOrders"]) == [0]
    assert logs.find("stuck order") == []


def test_sweeper_threshold_comes_from_stuck_after_seconds(load, providers, seed_aged, lambda_context, logs: LogCapture):
    five_minutes_old = seed_aged(OrderStatus.PAYMENT_CHARGED, 300)

    assert load("sweeper", STUCK_AFTER_SECONDS="1800")(SCHEDULED_EVENT, lambda_context)["stuck"] == []
    assert load("sweeper", STUCK_AFTER_SECONDS="60")(SCHEDULED_EVENT, lambda_context)["stuck"] == [
        five_minutes_old["order_id"]
    ]


def test_sweeper_find_stuck_cutoff_is_exclusive(order_factory, seed_order, tables: Tables):
    """updated_at exactly at the cutoff is not stuck yet; one second older is."""
    now = time.time()
    at_cutoff, older = order_factory(), order_factory()
    for order, age in ((at_cutoff, STUCK_AFTER), (older, STUCK_AFTER + 1)):
        seed_order(order, OrderStatus.RECEIVED)
        _set_updated_at(tables, order["order_id"], _iso(now - age))

    found = find_stuck(tables.orders, STUCK_AFTER, now=now, client=aws_clients.client("dynamodb"))

    assert [o["order_id"] for o in found] == [older["order_id"]]
    # read from the index: keys plus the projected correlation_id only
    assert set(found[0]) == {"order_id", "status", "updated_at", "correlation_id"}


# --- finish or park what it finds, once ---------------------------------------------------------------


def _key(order: dict, operation: str, attempt: int = 1) -> str:
    return f"{order['order_id']}#{operation}#attempt-{attempt}"


def _provider_capture(providers: FakeLambdaClient, order: dict, lambda_context) -> None:
    """The payment provider captures the attempt's charge (as ChargePayment asks it to)."""
    providers.functions[PAYMENT_FUNCTION](
        {
            "action": "charge",
            "idempotency_key": _key(order, "charge-payment"),
            "order_id": order["order_id"],
            "amount_cents": order_total_cents(order),
            "currency": order["currency"],
            "payment_token": order["payment_token"],
            "correlation_id": "cid-provider",
        },
        lambda_context,
    )


def _provider_ship(providers: FakeLambdaClient, order: dict, lambda_context) -> None:
    providers.functions[CARRIER_FUNCTION](
        {
            "action": "ship",
            "idempotency_key": _key(order, "ship-order"),
            "order_id": order["order_id"],
            "address": order["shipping_address"],
            "items": order["items"],
            "correlation_id": "cid-provider",
        },
        lambda_context,
    )


def _provider_refund(providers: FakeLambdaClient, order: dict, lambda_context) -> None:
    providers.functions[PAYMENT_FUNCTION](
        {
            "action": "refund",
            "idempotency_key": _key(order, "refund-payment"),
            "charge_idempotency_key": _key(order, "charge-payment"),
            "order_id": order["order_id"],
            "correlation_id": "cid-provider",
        },
        lambda_context,
    )


def _bodies(queue: NeedsAttentionQueue) -> list[dict]:
    return [m["body"] for m in queue.messages()]


def test_sweeper_parks_a_stuck_order_announced_with_its_correlation_id(
    sweeper, seed_aged, orders, needs_attention_queue: NeedsAttentionQueue, lambda_context, logs: LogCapture
):
    order = seed_aged(OrderStatus.INVENTORY_RESERVED, 2 * 3600)
    oid = order["order_id"]

    result = sweeper(SCHEDULED_EVENT, lambda_context)

    assert result["parked"] == [oid]
    stored = orders.get(oid)
    assert stored["status"] == OrderStatus.NEEDS_ATTENTION.value
    assert stored["history"][-1]["by"] == "sweeper"
    assert stored["last_error"]["correlation_id"] == f"cid-{oid}"
    (message,) = needs_attention_queue.messages()
    body = message["body"]
    assert (body["order_id"], body["payment_attempt"], body["source"]) == (oid, 1, "sweeper")
    assert body["correlation_id"] == f"cid-{oid}"
    assert "stuck in INVENTORY_RESERVED" in body["reason"]
    assert message["attributes"]["correlation_id"]["StringValue"] == f"cid-{oid}"
    assert logs.metric_total("StuckOrdersParked") == 1
    assert {line["correlation_id"] for line in logs.find("sweeper moved order")} == {f"cid-{oid}"}


def test_sweeper_repeated_sweep_does_nothing_twice(
    sweeper, seed_aged, orders, needs_attention_queue: NeedsAttentionQueue, lambda_context, logs
):
    order = seed_aged(OrderStatus.PAYMENT_CHARGED, 2 * 3600)

    first = sweeper(SCHEDULED_EVENT, lambda_context)
    history = orders.get(order["order_id"])["history"]
    second = sweeper(SCHEDULED_EVENT, lambda_context)

    assert first["parked"] == [order["order_id"]]
    assert second["parked"] == second["stuck"] == second["mismatched"] == []
    assert len(needs_attention_queue.messages()) == 1
    assert orders.get(order["order_id"])["history"] == history


def test_sweeper_finishes_a_shipped_order_the_providers_confirm(
    sweeper,
    seed_aged,
    orders,
    providers: FakeLambdaClient,
    needs_attention_queue: NeedsAttentionQueue,
    lambda_context,
    logs: LogCapture,
):
    """MarkCompleted failed after ShipOrder (e.g. the status write's retries ran out): SHIPPED for good."""
    order = seed_aged(OrderStatus.SHIPPED, 2 * 3600)
    _provider_capture(providers, order, lambda_context)
    _provider_ship(providers, order, lambda_context)

    result = sweeper(SCHEDULED_EVENT, lambda_context)

    assert result["finished"] == [order["order_id"]]
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPLETED.value
    assert logs.metric_total("StuckOrdersFinished") == 1
    # just COMPLETED: the same sweep's reconciliation agrees with the providers
    assert result["mismatched"] == [] and needs_attention_queue.messages() == []


@pytest.mark.parametrize(
    ("captured", "shipped", "finding"),
    [(False, True, "no capture"), (True, False, "no live shipment")],
)
def test_sweeper_parks_a_shipped_order_the_providers_contradict(
    sweeper,
    seed_aged,
    orders,
    providers: FakeLambdaClient,
    needs_attention_queue: NeedsAttentionQueue,
    lambda_context,
    logs,
    captured,
    shipped,
    finding,
):
    order = seed_aged(OrderStatus.SHIPPED, 2 * 3600)
    if captured:
        _provider_capture(providers, order, lambda_context)
    if shipped:
        _provider_ship(providers, order, lambda_context)

    result = sweeper(SCHEDULED_EVENT, lambda_context)

    assert result["parked"] == [order["order_id"]] and result["finished"] == []
    assert orders.get(order["order_id"])["status"] == OrderStatus.NEEDS_ATTENTION.value
    (body,) = _bodies(needs_attention_queue)
    assert finding in body["reason"]


def test_sweeper_leaves_an_order_whose_repair_execution_runs(
    sweeper,
    seed_aged,
    orders,
    state_machine: str,
    needs_attention_queue: NeedsAttentionQueue,
    lambda_context,
    logs,
):
    """A redrive's first steps answer from their records and write nothing: the order looks stuck."""
    order = seed_aged(OrderStatus.PAYMENT_CHARGED, 2 * 3600)
    aws_clients.client("stepfunctions").start_execution(
        stateMachineArn=state_machine, name=f"order-{order['order_id']}-attempt-1-repair-0", input="{}"
    )

    result = sweeper(SCHEDULED_EVENT, lambda_context)

    assert result["running"] == [order["order_id"]] and result["parked"] == []
    assert orders.get(order["order_id"])["status"] == OrderStatus.PAYMENT_CHARGED.value
    assert needs_attention_queue.messages() == []


# --- reconcile recently terminal orders with the providers' records ------------------------------------


def test_sweeper_announces_a_completed_order_without_a_capture_once(
    sweeper,
    order_factory,
    seed_order,
    orders,
    providers: FakeLambdaClient,
    needs_attention_queue: NeedsAttentionQueue,
    lambda_context,
    logs: LogCapture,
):
    order = order_factory()
    seed_order(order, OrderStatus.COMPLETED, correlation_id="cid-mismatch")
    _provider_ship(providers, order, lambda_context)  # shipped, but the provider never captured

    first = sweeper(SCHEDULED_EVENT, lambda_context)
    second = sweeper(SCHEDULED_EVENT, lambda_context)

    assert first["mismatched"] == [order["order_id"]] and second["mismatched"] == []
    (message,) = needs_attention_queue.messages()
    assert message["body"]["source"] == "sweeper"
    assert message["body"]["correlation_id"] == "cid-mismatch"
    assert "COMPLETED but the providers say: no capture" in message["body"]["reason"]
    assert logs.metric_total("SideEffectMismatches") == 1
    stored = orders.get(order["order_id"])
    assert stored["status"] == OrderStatus.COMPLETED.value  # announced, not rewritten
    assert stored["reconciled"]["findings"]


@pytest.mark.parametrize(
    ("captured", "refunded", "shipped", "finding"),
    [
        (True, False, False, "3499 cents still captured"),
        (True, True, True, "a live shipment"),
    ],
)
def test_sweeper_announces_a_compensated_order_whose_side_effects_remain(
    sweeper,
    order_factory,
    seed_order,
    providers: FakeLambdaClient,
    needs_attention_queue: NeedsAttentionQueue,
    lambda_context,
    logs,
    captured,
    refunded,
    shipped,
    finding,
):
    order = order_factory()
    seed_order(order, OrderStatus.COMPENSATED)
    if captured:
        _provider_capture(providers, order, lambda_context)
    if refunded:
        _provider_refund(providers, order, lambda_context)
    if shipped:
        _provider_ship(providers, order, lambda_context)

    result = sweeper(SCHEDULED_EVENT, lambda_context)

    assert result["mismatched"] == [order["order_id"]]
    (body,) = _bodies(needs_attention_queue)
    assert finding in body["reason"]


def test_sweeper_reconciles_agreeing_terminal_orders_silently_and_once(
    sweeper,
    order_factory,
    seed_order,
    orders,
    providers: FakeLambdaClient,
    needs_attention_queue: NeedsAttentionQueue,
    lambda_context,
    logs,
):
    completed, compensated = order_factory(), order_factory()
    seed_order(completed, OrderStatus.COMPLETED)
    _provider_capture(providers, completed, lambda_context)
    _provider_ship(providers, completed, lambda_context)
    seed_order(compensated, OrderStatus.COMPENSATED)
    _provider_capture(providers, compensated, lambda_context)
    _provider_refund(providers, compensated, lambda_context)
    providers.calls.clear()

    first = sweeper(SCHEDULED_EVENT, lambda_context)
    lookups = len(providers.calls)
    second = sweeper(SCHEDULED_EVENT, lambda_context)

    assert sorted(first["reconciled"]) == sorted([completed["order_id"], compensated["order_id"]])
    assert first["mismatched"] == [] and needs_attention_queue.messages() == []
    assert lookups == 4  # a charge and a shipment lookup per order
    assert second["reconciled"] == [] and len(providers.calls) == lookups  # checked once
    assert orders.get(completed["order_id"])["reconciled"]["findings"] == []


def test_sweeper_reconciles_at_most_the_configured_orders_per_sweep_oldest_first(
    load, providers, order_factory, seed_order, tables: Tables, lambda_context, logs: LogCapture
):
    sweeper = load("sweeper", RECONCILE_MAX_ORDERS="2")
    now = time.time()
    ages = [60, 300, 120]  # seconds since each became COMPLETED
    seeded = []
    for age in ages:
        order = order_factory()
        seed_order(order, OrderStatus.COMPLETED)
        _set_updated_at(tables, order["order_id"], _iso(now - age))
        seeded.append(order["order_id"])

    first = sweeper(SCHEDULED_EVENT, lambda_context)
    second = sweeper(SCHEDULED_EVENT, lambda_context)

    assert first["reconciled"] == sorted([seeded[1], seeded[2]]) and first["deferred"] == [seeded[0]]
    assert second["reconciled"] == [seeded[0]]  # the next sweep takes the rest
    assert logs.metric_total("SweepDeferred") == 1


def test_sweeper_publishes_heartbeat_and_parked_orders_gauge(sweeper, seed_aged, lambda_context, logs: LogCapture):
    """Every run says it ran (SweeperRuns, the heartbeat alarm's metric) and how many orders are parked
    now (ParkedOrders: announced for as long as they are parked, whatever the queue's retention)."""
    seed_aged(OrderStatus.NEEDS_ATTENTION, 20 * 86400)  # parked three weeks ago: its message has expired
    seed_aged(OrderStatus.NEEDS_ATTENTION, 60)
    seed_aged(OrderStatus.COMPLETED, 2 * 3600)

    sweeper(SCHEDULED_EVENT, lambda_context)

    (blob,) = _stuck_metric_blobs(logs)
    assert _values(blob["SweeperRuns"]) == [1]
    assert _values(blob["ParkedOrders"]) == [2]
    assert blob["service"] == "sweeper"


def _service(handler):
    """The sweeper service the loaded handler module built at its cold start."""
    return inspect.unwrap(handler).__globals__["sweeper"]


def _seed_completed(order_factory, seed_order, tables: Tables, ages: list[int]) -> list[str]:
    """COMPLETED orders that ended ``ages`` seconds ago, in that order."""
    now, seeded = time.time(), []
    for age in ages:
        order = order_factory()
        seed_order(order, OrderStatus.COMPLETED)
        _set_updated_at(tables, order["order_id"], _iso(now - age))
        seeded.append(order["order_id"])
    return seeded


def test_sweeper_reconciles_the_sized_capacity_paced_below_the_read_limit(
    sweeper, order_factory, seed_order, tables: Tables, providers: FakeLambdaClient, lambda_context, logs
):
    """The deployed figures: ``CAPACITY.reconcile_per_sweep`` orders a sweep (order_domain.reconcile_sizing),
    each provider's lookups taking a token of its own pacer at ``CAPACITY.reads_per_second``."""
    service = _service(sweeper)
    assert service.reconcile_max_orders == CAPACITY.reconcile_per_sweep
    payment_pacer, carrier_pacer = service.pacers
    assert payment_pacer.rate == carrier_pacer.rate == CAPACITY.reads_per_second
    _seed_completed(order_factory, seed_order, tables, [60, 120, 180])

    result = sweeper(SCHEDULED_EVENT, lambda_context)

    assert len(result["reconciled"]) == 3
    assert payment_pacer.taken == carrier_pacer.taken == 3  # every lookup paced, one per order at each provider
    assert len(providers.calls) == 6


def test_sweeper_reconciles_orders_a_few_at_once_with_the_one_at_a_time_result(
    sweeper, order_factory, seed_order, tables: Tables, providers: FakeLambdaClient, lambda_context, logs
):
    """Against HTTPS providers the sweeper reconciles ``CAPACITY.workers`` orders at once; the result is the
    one-at-a-time result, every attempt checked once."""
    _service(sweeper).workers = 4
    threads: set[str] = set()
    invoke = providers.invoke

    def recorded(**kwargs):
        threads.add(threading.current_thread().name)
        return invoke(**kwargs)

    providers.invoke = recorded  # type: ignore[method-assign]
    seeded = _seed_completed(order_factory, seed_order, tables, [60 + n for n in range(9)])

    first = sweeper(SCHEDULED_EVENT, lambda_context)
    lookups = len(providers.calls)
    second = sweeper(SCHEDULED_EVENT, lambda_context)

    assert first["reconciled"] == sorted(seeded) and first["deferred"] == [] and first["errors"] == []
    assert lookups == 2 * 9 and len(threads) > 1
    assert second["reconciled"] == [] and len(providers.calls) == lookups  # each attempt checked once
    assert logs.metric_total("SweepDeferred") == 0


def test_sweeper_stops_before_its_timeout_and_leaves_the_rest_to_the_next_oldest_first(
    sweeper, order_factory, seed_order, tables: Tables, providers: FakeLambdaClient, lambda_context, logs
):
    """Each lookup takes a second of the invocation: a sweep that starts with its reserve plus 5 s takes three
    orders (the oldest), the last of them with its reserve still ahead, defers the two newest, and ends with time
    left; the next sweep checks those two, and nothing twice."""
    clock = [0.0]
    invoke = providers.invoke

    def one_second_each(**kwargs):
        clock[0] += 1.0
        return invoke(**kwargs)

    providers.invoke = one_second_each  # type: ignore[method-assign]
    seeded = _seed_completed(order_factory, seed_order, tables, [300, 250, 200, 150, 100])
    short = FakeLambdaContext(timeout_seconds=RESERVE_SECONDS + 5, clock=lambda: clock[0])

    first = sweeper(SCHEDULED_EVENT, short)
    left = short.get_remaining_time_in_millis() / 1000
    second = sweeper(SCHEDULED_EVENT, lambda_context)

    assert first["reconciled"] == sorted(seeded[:3]) and first["deferred"] == sorted(seeded[3:])
    assert left > 0
    assert second["reconciled"] == sorted(seeded[3:]) and second["deferred"] == []
    assert len(providers.calls) == 2 * 5  # each attempt checked once
    assert logs.metric_total("SweepDeferred") == 2
