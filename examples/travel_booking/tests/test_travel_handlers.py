"""The step handlers on moto (no emulator): what each writes, once per booking; a declined card; a throttle."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

import steps
from lambda_resilience.aws import reset_clients
from lambda_resilience.exceptions import TransientStepError
from lambda_resilience.testing import FakeLambdaContext
from local_cloud.faults import throttle_dynamodb

BOOKINGS, IDEMPOTENCY = "bookings", "idempotency"


@pytest.fixture
def tables(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for key, value in {
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_MAX_ATTEMPTS": "1",  # a throttle reaches the handler at once (no SDK retries in the test)
        "BOOKINGS_TABLE": BOOKINGS,
        "IDEMPOTENCY_TABLE": IDEMPOTENCY,
        "POWERTOOLS_METRICS_NAMESPACE": "TravelBooking",
        "POWERTOOLS_SERVICE_NAME": "charge-card",
    }.items():
        monkeypatch.setenv(key, value)
    with mock_aws():
        reset_clients()
        ddb = boto3.client("dynamodb")
        for name, key in ((BOOKINGS, "booking_id"), (IDEMPOTENCY, "id")):
            ddb.create_table(
                TableName=name,
                KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
                AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
                BillingMode="PAY_PER_REQUEST",
            )
        yield ddb
        reset_clients()


def _booking(ddb: Any, booking_id: str) -> dict[str, str]:
    item = ddb.get_item(TableName=BOOKINGS, Key={"booking_id": {"S": booking_id}}).get("Item", {})
    return {k: v["S"] for k, v in item.items()}


def _handler(name: str) -> Any:
    return steps._handler(steps.charge if name == "charge" else steps._set("hotel", "RESERVED"))


def test_travel_handlers_charge_writes_once_per_booking(tables: Any) -> None:
    charge = _handler("charge")
    event = {"booking_id": "b-1", "card": "4242-4242-4242-4242"}
    assert charge(event, FakeLambdaContext()) == {"payment": "CHARGED"}
    tables.delete_item(TableName=BOOKINGS, Key={"booking_id": {"S": "b-1"}})
    assert charge(event, FakeLambdaContext()) == {"payment": "CHARGED"}  # the first call's result
    assert _booking(tables, "b-1") == {}  # ... and no second write


def test_travel_handlers_declined_card_is_a_business_outcome(tables: Any, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(steps.CardDeclined):
        _handler("charge")({"booking_id": "b-2", "card": steps.DECLINED_CARD}, FakeLambdaContext())
    assert _booking(tables, "b-2") == {}
    assert '"ExpectedErrors"' in capsys.readouterr().out  # EMF: the alarm subtracts it, nobody is paged


def test_travel_handlers_throttle_is_raised_as_transient(tables: Any) -> None:
    with throttle_dynamodb(lambda method, table, attrs: table == BOOKINGS), pytest.raises(TransientStepError):
        _handler("reserve")({"booking_id": "b-3"}, FakeLambdaContext())


def test_travel_handlers_input_without_booking_is_refused(tables: Any) -> None:
    with pytest.raises(Exception, match="booking_id") as refused:
        _handler("reserve")({"card": "4242"}, FakeLambdaContext())
    assert type(refused.value).__name__ == "InvalidStepInput"
