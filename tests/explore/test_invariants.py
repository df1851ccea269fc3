"""The exploration's invariants see what they name: each is shown a world that breaks it (built with the
domain's own writes and the sandbox's ledger), and a world that keeps it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lambda_resilience.aws import to_item
from order_domain.status import OrderStatus
from tests.explore.actors import Actors
from tests.explore.invariants import check
from tests.explore.saga_model import Execution
from tests.explore.world import LEDGER, ORDERS, world

ONLY = {
    name: frozenset({"money", "parcel", "stock", "lost_sale", "announced", "settled", "forward_on_compensating"})
    - {name}
    for name in ("money", "parcel", "stock", "lost_sale", "announced", "settled")
}


@pytest.fixture
def actors() -> Iterator[Actors]:
    yield Actors(world())


def _ledger_op(actors: Actors, provider: str, key: str, **op: object) -> None:
    actors.world.raw(
        "PutItem",
        TableName=LEDGER,
        Item=to_item({"pk": f"op#{provider}#{key}", "sk": "op", "idempotency_key": key, **op}),
    )


def _compensate(actors: Actors, order_id: str) -> None:
    repository = actors.intake.orders
    assert repository.transition(order_id, OrderStatus.COMPENSATING, attempt=1) == "moved"
    assert repository.transition(order_id, OrderStatus.COMPENSATED, attempt=1) == "moved"


def test_invariants_money_flags_a_compensated_order_still_holding_a_capture(actors: Actors) -> None:
    order_id = actors.place("declined")
    _compensate(actors, order_id)
    assert check(actors, ONLY["money"]) == []
    _ledger_op(actors, "payment", f"{order_id}#charge-payment#attempt-1", status="captured", captured_cents=1250)
    assert check(actors, ONLY["money"]) == [f"money: {order_id} attempt 1 COMPENSATED still holds 1250 cents"]


def test_invariants_parcel_flags_a_compensated_order_with_a_parcel_the_carrier_forgot(actors: Actors) -> None:
    order_id = actors.place("undeliverable")
    _compensate(actors, order_id)
    pk = f"op#carrier#{order_id}#ship-order#attempt-1"
    actors.archive[pk] = {"pk": pk, "status": "shipped"}
    _ledger_op(actors, "carrier", f"{order_id}#ship-order#attempt-1", status="cancelled")
    assert check(actors, ONLY["parcel"]) == [f"parcel: {order_id} attempt 1 COMPENSATED with a parcel delivered"]


def test_invariants_stock_flags_a_reservation_kept_by_a_compensated_order(actors: Actors) -> None:
    order_id = actors.place("valid")
    assert check(actors, ONLY["stock"]) == []
    actors.world.handlers["reserve_inventory"](
        {"order_id": order_id, "payment_attempt": 1, "correlation_id": "c"}, actors.world.context()
    )
    assert check(actors, ONLY["stock"]) == []
    actors.world.raw(
        "UpdateItem",
        TableName=ORDERS,
        Key=to_item({"order_id": order_id}),
        UpdateExpression="SET #s = :c",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues=to_item({":c": "COMPENSATED"}),
    )
    assert check(actors, ONLY["stock"]) == [f"stock: {order_id} attempt 1 still holds a reservation (COMPENSATED)"]


def test_invariants_lost_sale_flags_a_valid_order_compensated_silently(actors: Actors) -> None:
    order_id = actors.place("valid")
    _compensate(actors, order_id)
    assert check(actors, ONLY["lost_sale"]) == [
        f"lost_sale: valid order {order_id} COMPENSATED, nobody paged, no operator asked"
    ]
    actors.orders[order_id].operator_compensated = True
    assert check(actors, ONLY["lost_sale"]) == []


def test_invariants_announced_flags_a_success_that_leaves_the_order_parked(actors: Actors) -> None:
    order_id = actors.place("valid")
    execution = next(iter(actors.executions.values()))
    assert isinstance(execution, Execution)
    execution.state = "SUCCEEDED"
    actors._settle(execution)  # it closes SUCCEEDED with the order RECEIVED
    assert check(actors, ONLY["announced"]) == [f"announced: {execution.name} SUCCEEDED but {order_id} is RECEIVED"]


def test_invariants_announced_judges_a_success_by_what_it_left_when_it_closed(actors: Actors) -> None:
    """A park after the execution closed (a provider's late change parks a COMPENSATED order) is announced by
    its own park: the closed execution's SUCCEEDED cannot change (Step Functions redrives no SUCCEEDED one)."""
    order_id = actors.place("valid")
    execution = next(iter(actors.executions.values()))
    _compensate(actors, order_id)
    execution.state = "SUCCEEDED"
    actors._settle(execution)
    actors.world.raw(
        "UpdateItem",
        TableName=ORDERS,
        Key=to_item({"order_id": order_id}),
        UpdateExpression="SET #s = :na",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues=to_item({":na": "NEEDS_ATTENTION"}),
    )
    assert check(actors, ONLY["announced"]) == [f"announced: {order_id} is parked and nobody was told"]
