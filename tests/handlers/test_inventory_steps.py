"""ReserveInventory / ReleaseInventory saga steps: stock moves exactly once per order."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

import lambda_resilience.aws as aws_clients
from lambda_resilience.exceptions import DependencyUnavailable, TransientStepError
from order_domain.errors import InsufficientStock, InventoryContention, StaleAttempt
from order_domain.status import OrderStatus
from tests.handlers.conftest import invoke_json, present

from .conftest import IdempotencyView, Inventory, LogCapture


@pytest.fixture
def reserve(load):
    return load("reserve_inventory")


@pytest.fixture
def release(load):
    return load("release_inventory")


def test_reserve_three_invocations_decrement_stock_once(
    reserve, order_factory, saga_input, seed_order, inventory: Inventory, orders, lambda_context, logs: LogCapture
):
    inventory.seed(**{"SKU-A": 10, "SKU-B": 3})
    order = order_factory()
    seed_order(order)
    event = saga_input(order, "cid-reserve")

    results = [reserve(event, lambda_context) for _ in range(3)]

    assert results[0] == {"status": "reserved", "items": {"SKU-A": 2, "SKU-B": 1}}
    assert results[1] == results[0]
    assert results[2] == results[0]
    assert inventory.available("SKU-A") == 8
    assert inventory.available("SKU-B") == 2
    assert present(inventory.reservation(order["order_id"]))["status"] == "RESERVED"
    assert orders.get(order["order_id"])["status"] == OrderStatus.INVENTORY_RESERVED.value
    assert len(logs.find("duplicate suppressed")) == 2
    assert {line["correlation_id"] for line in logs.read()} == {"cid-reserve"}


def test_reserve_rerun_after_idempotency_record_lost_does_not_take_stock_again(
    reserve,
    order_factory,
    saga_input,
    seed_order,
    inventory: Inventory,
    idempotency_records: IdempotencyView,
    lambda_context,
    logs,
):
    inventory.seed(**{"SKU-A": 10, "SKU-B": 3})
    order = order_factory()
    seed_order(order)
    event = saga_input(order)

    first = reserve(event, lambda_context)
    idempotency_records.forget(f"{order['order_id']}#reserve-inventory#attempt-1")
    second = reserve(event, lambda_context)

    assert second == first
    assert inventory.available("SKU-A") == 8
    assert inventory.available("SKU-B") == 2


def test_reserve_insufficient_stock_raises_insufficient_stock_and_takes_nothing(
    reserve,
    order_factory,
    saga_input,
    seed_order,
    inventory: Inventory,
    orders,
    idempotency_records,
    lambda_context,
    logs,
):
    inventory.seed(**{"SKU-A": 1, "SKU-B": 5})  # the order needs 2 x SKU-A
    order = order_factory()
    seed_order(order)

    with pytest.raises(InsufficientStock) as raised:
        reserve(saga_input(order, "cid-short"), lambda_context)

    assert type(raised.value).__name__ == "InsufficientStock"  # the name Step Functions Catch sees
    assert inventory.available("SKU-A") == 1
    assert inventory.available("SKU-B") == 5
    assert inventory.reservation(order["order_id"]) is None
    assert orders.get(order["order_id"])["status"] == OrderStatus.RECEIVED.value
    # a failed operation leaves no idempotency record behind: a later retry really runs
    assert idempotency_records.get(f"{order['order_id']}#reserve-inventory#attempt-1") is None
    (failed,) = logs.find("reserve-inventory failed")
    assert failed["error_type"] == "InsufficientStock"
    assert failed["category"] == "permanent"
    assert failed["correlation_id"] == "cid-short"


def test_reserve_insufficient_stock_error_type_survives_the_lambda_error_payload(
    reserve, order_factory, saga_input, seed_order, inventory: Inventory, lambda_context, logs
):
    inventory.seed(**{"SKU-B": 5})  # SKU-A does not exist at all
    order = order_factory()
    seed_order(order)

    body, errored = invoke_json(reserve, saga_input(order), lambda_context)

    assert errored
    assert '"errorType": "InsufficientStock"' in body


def test_reserve_transient_dynamodb_error_surfaces_as_transient_step_error(
    reserve,
    order_factory,
    saga_input,
    seed_order,
    inventory: Inventory,
    idempotency_records,
    lambda_context,
    logs,
    monkeypatch,
):
    inventory.seed(**{"SKU-A": 10, "SKU-B": 3})
    order = order_factory()
    seed_order(order)
    # The handler's client: the composition root (order_domain.wiring) shares one per service.
    shared = aws_clients.client("dynamodb")

    def throttled(**_: Any) -> Any:
        raise ClientError(
            {
                "Error": {"Code": "ThrottlingException", "Message": "slow down"},
                "ResponseMetadata": {"HTTPStatusCode": 400},
            },
            "TransactWriteItems",
        )

    with monkeypatch.context() as patched, pytest.raises(TransientStepError) as raised:
        patched.setattr(shared, "transact_write_items", throttled)
        reserve(saga_input(order), lambda_context)
    assert "ThrottlingException" in str(raised.value)
    (failed,) = logs.find("reserve-inventory failed")
    assert failed["category"] == "transient"
    assert idempotency_records.get(f"{order['order_id']}#reserve-inventory#attempt-1") is None

    assert reserve(saga_input(order), lambda_context)["status"] == "reserved"  # the retry runs
    assert inventory.available("SKU-A") == 8


def test_reserve_transaction_cancelled_by_throttling_is_inventory_contention_not_a_provider_failure(
    reserve, order_factory, saga_input, seed_order, inventory: Inventory, lambda_context, logs, monkeypatch
):
    """A reservation's transaction cancelled by a throttled item is the step's own DynamoDB trouble: transient,
    never named as a provider's failure (the provider outage alarms count those only, issue 41)."""
    inventory.seed(**{"SKU-A": 10, "SKU-B": 3})
    order = order_factory()
    seed_order(order)
    shared = aws_clients.client("dynamodb")

    def cancelled(**_: Any) -> Any:
        raise ClientError(
            {
                "Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
                "CancellationReasons": [{"Code": "None"}, {"Code": "ThrottlingError"}],
                "ResponseMetadata": {"HTTPStatusCode": 400},
            },
            "TransactWriteItems",
        )

    with monkeypatch.context() as patched, pytest.raises(TransientStepError) as raised:
        patched.setattr(shared, "transact_write_items", cancelled)
        reserve(saga_input(order), lambda_context)
    assert isinstance(raised.value.__cause__, InventoryContention)
    assert not isinstance(raised.value.__cause__, DependencyUnavailable)
    (failed,) = logs.find("reserve-inventory failed")
    assert (failed["category"], failed["error_type"]) == ("transient", "InventoryContention")


def test_release_when_nothing_reserved_writes_tombstone_and_blocks_a_late_reserve(
    reserve, release, order_factory, saga_input, seed_order, inventory: Inventory, orders, lambda_context, logs
):
    inventory.seed(**{"SKU-A": 10, "SKU-B": 3})
    order = order_factory()
    seed_order(order)
    event = saga_input(order, "cid-release")

    assert release(event, lambda_context) == {"status": "nothing_reserved"}
    tombstone = inventory.reservation(order["order_id"])
    assert tombstone is not None
    assert tombstone["status"] == "RELEASED"
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPENSATING.value

    with pytest.raises(StaleAttempt) as raised:
        reserve(event, lambda_context)  # a late reserve: refused by its stage first, the tombstone behind
    assert type(raised.value).__name__ == "StaleAttempt"
    assert inventory.available("SKU-A") == 10
    assert inventory.available("SKU-B") == 3
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPENSATING.value


def test_release_after_reserve_restores_stock_exactly_once(
    reserve,
    release,
    order_factory,
    saga_input,
    seed_order,
    inventory: Inventory,
    idempotency_records,
    orders,
    lambda_context,
    logs,
):
    inventory.seed(**{"SKU-A": 5, "SKU-B": 5})
    order = order_factory()
    seed_order(order)
    event = saga_input(order)
    reserve(event, lambda_context)
    assert (inventory.available("SKU-A"), inventory.available("SKU-B")) == (3, 4)

    first = release(event, lambda_context)
    second = release(event, lambda_context)

    assert first == {"status": "released", "items": {"SKU-A": 2, "SKU-B": 1}}
    assert second == first
    assert (inventory.available("SKU-A"), inventory.available("SKU-B")) == (5, 5)
    assert present(inventory.reservation(order["order_id"]))["status"] == "RELEASED"
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPENSATING.value

    idempotency_records.forget(f"{order['order_id']}#release-inventory#attempt-1")
    assert release(event, lambda_context) == {"status": "already_released"}
    assert (inventory.available("SKU-A"), inventory.available("SKU-B")) == (5, 5)


def test_release_when_partly_reserved_gives_back_exactly_what_was_reserved(
    release,
    order_factory,
    saga_input,
    seed_order,
    inventory: Inventory,
    orders,
    idempotency_records: IdempotencyView,
    lambda_context,
    logs,
):
    """A reservation covering only some of the order's items (2 x SKU-A, 1 x SKU-B ordered)."""
    inventory.seed(**{"SKU-A": 4, "SKU-B": 5})  # 1 x SKU-A already taken by the reservation below
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    aws_clients.client("dynamodb").put_item(
        TableName=inventory.table,
        Item=aws_clients.to_item(
            {
                "pk": f"reservation#{order['order_id']}#attempt-1",
                "status": "RESERVED",
                "order_id": order["order_id"],
                "items": {"SKU-A": 1},
            }
        ),
    )
    event = saga_input(order, "cid-partly")

    result = release(event, lambda_context)

    assert result == {"status": "released", "items": {"SKU-A": 1}}
    assert inventory.available("SKU-A") == 5  # the one reserved unit is back
    assert inventory.available("SKU-B") == 5  # never reserved, so nothing is added
    assert present(inventory.reservation(order["order_id"]))["status"] == "RELEASED"
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPENSATING.value

    idempotency_records.forget(f"{order['order_id']}#release-inventory#attempt-1")
    assert release(event, lambda_context) == {"status": "already_released"}
    assert (inventory.available("SKU-A"), inventory.available("SKU-B")) == (5, 5)
