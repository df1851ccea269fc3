"""The sweeper's reconciliation reads the window's terminal orders 100 at a time, projected, and
reads whole only those with an attempt left to check; an answer it did not get counts as pending."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any
from unittest import mock

import boto3
import botocore.client
import pytest
from botocore.stub import Stubber

from order_domain.reconcile_reads import BATCH_KEYS, pending_reconciliation
from order_domain.status import OrderStatus

SCHEDULED_EVENT = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}
TABLE = "orders"


@pytest.fixture
def sweeper(load, providers):
    return load("sweeper")


@pytest.fixture
def dynamodb_calls() -> Iterator[Counter[str]]:
    """Every DynamoDB operation any client makes while the fixture is active, counted by name."""
    calls: Counter[str] = Counter()
    real = botocore.client.BaseClient._make_api_call

    def counting(self: Any, operation_name: str, api_params: dict[str, Any]) -> Any:
        if self.meta.service_model.service_name == "dynamodb":
            calls[operation_name] += 1
        return real(self, operation_name, api_params)

    with mock.patch.object(botocore.client.BaseClient, "_make_api_call", counting):
        yield calls


def test_reconcile_reads_already_reconciled_orders_in_batches_not_one_by_one(
    sweeper, order_factory, seed_order, lambda_context, dynamodb_calls: Counter[str]
) -> None:
    """Every sweep sees each terminal order of its window; once reconciled, an order costs no read
    of its own: 120 orders are one query and two batch reads, not 120 GetItems."""
    for _ in range(120):
        seed_order(order_factory(), OrderStatus.COMPENSATED)  # nothing at the providers: it agrees
    first = sweeper(SCHEDULED_EVENT, lambda_context)
    assert len(first["reconciled"]) == 120 and first["mismatched"] == []
    dynamodb_calls.clear()

    second = sweeper(SCHEDULED_EVENT, lambda_context)

    assert second["reconciled"] == [] and second["errors"] == []
    assert dynamodb_calls["GetItem"] == 0
    assert dynamodb_calls["BatchGetItem"] == 2  # 100 keys per request


def _stubbed() -> tuple[Any, Stubber]:
    client = boto3.client("dynamodb", region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s")
    return client, Stubber(client)


def _item(order_id: str, attempt: int, reconciled: list[int]) -> dict[str, Any]:
    return {
        "order_id": {"S": order_id},
        "payment_attempt": {"N": str(attempt)},
        "reconciled_attempts": {"L": [{"N": str(a)} for a in reconciled]},
    }


def _request(ids: list[str]) -> dict[str, Any]:
    names = {"#a0": "order_id", "#a1": "payment_attempt", "#a2": "attempts", "#a3": "reconciled_attempts"}
    return {
        "RequestItems": {
            TABLE: {
                "Keys": [{"order_id": {"S": i}} for i in ids],
                "ConsistentRead": True,
                "ProjectionExpression": ", ".join(names),
                "ExpressionAttributeNames": names,
            }
        }
    }


def test_reconcile_reads_pending_are_unreconciled_attempts_and_unprocessed_keys() -> None:
    """``done`` is reconciled; ``new`` has attempt 2 unchecked; ``left`` came back in UnprocessedKeys
    (unknown: checked one by one, as before); ``gone`` is not in the table."""
    client, stub = _stubbed()
    ids = ["done", "new", "left", "gone"]
    response = {
        "Responses": {TABLE: [_item("done", 1, [1]), _item("new", 2, [1])]},
        "UnprocessedKeys": {TABLE: {"Keys": [{"order_id": {"S": "left"}}]}},
    }
    stub.add_response("batch_get_item", response, _request(ids))
    with stub:
        assert pending_reconciliation(client, TABLE, ids, log=mock.Mock()) == {"new", "left"}
    stub.assert_no_pending_responses()


def test_reconcile_reads_a_failed_batch_leaves_its_orders_pending_and_the_next_batch_read() -> None:
    """A throttled request (after botocore's retries) is no answer: its 100 orders are checked one by
    one; the next batch is still read."""
    client, stub = _stubbed()
    ids = [f"o{i}" for i in range(BATCH_KEYS + 1)]
    stub.add_client_error(
        "batch_get_item", "ProvisionedThroughputExceededException", expected_params=_request(ids[:100])
    )
    stub.add_response("batch_get_item", {"Responses": {TABLE: [_item("o100", 1, [1])]}}, _request(ids[100:]))
    log = mock.Mock()
    with stub:
        assert pending_reconciliation(client, TABLE, ids, log=log) == set(ids[:100])
    stub.assert_no_pending_responses()
    log.warning.assert_called_once()
