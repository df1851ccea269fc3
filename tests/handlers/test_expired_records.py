"""Issue 28, class "time passes": a redrive after our own idempotency records expired (15 days) and
the providers forgot the keys (Stripe prunes them after 24 hours) must not charge or ship again.

The fault matrix's ``time@record-and-key-expired-before-redrive`` cell found it: the redrive's charge
step, with no record to answer from, sent the charge again under the same key, the provider took
it for a new request, and the order ended COMPLETED with two captures and two parcels. Our own
orders table still says the attempt was charged and shipped: that is what the steps answer from.
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

import order_domain.env as env_names
from order_domain.errors import StaleAttempt
from order_domain.status import OrderStatus
from sandbox.http_server import serve_sandbox

from .conftest import REGION, LedgerView, Tables, scan


def _expire_our_records(table: str) -> None:
    """DynamoDB's TTL deleted every expired idempotency record."""
    client = boto3.client("dynamodb", region_name=REGION)
    for item in scan(table):
        client.delete_item(TableName=table, Key={"id": {"S": item["id"]}})


def _env(endpoints: Any) -> dict[str, str]:
    sm = boto3.client("secretsmanager", region_name=REGION)
    arn = sm.create_secret(Name="test/expired", SecretString=json.dumps({"api_key": endpoints.api_key}))["ARN"]
    return {
        env_names.PAYMENT_PROVIDER_FUNCTION: "",
        env_names.CARRIER_FUNCTION: "",
        env_names.PAYMENT_API_URL: endpoints.payment_url,
        env_names.PAYMENT_API_SECRET_ARN: arn,
        env_names.CARRIER_API_URL: endpoints.carrier_url,
        env_names.CARRIER_API_SECRET_ARN: arn,
    }


def test_redrive_after_our_records_and_the_providers_keys_expired_charges_and_ships_once(
    load, tables: Tables, ledger: LedgerView, order_factory, saga_input, seed_order, lambda_context
):
    """ShipOrder records COMPLETED itself (decision 0024): a redrive 16 days later, after our
    idempotency records and the providers' keys expired, is refused by the order's own status."""
    clock = [1_000_000.0]
    with serve_sandbox(tables.ledger, key_window_seconds=24 * 3600, now=lambda: clock[0]) as endpoints:
        env = _env(endpoints)
        order = order_factory()
        seed_order(order, OrderStatus.INVENTORY_RESERVED)
        state = saga_input(order)
        assert load("charge_payment", **env)(state, lambda_context)["status"] == "captured"
        assert load("ship_order", **env)(state, lambda_context)["status"] == "shipped"
        clock[0] += 16 * 24 * 3600  # an operator redrives the execution 16 days later
        _expire_our_records(tables.idempotency)

        with pytest.raises(StaleAttempt):
            load("charge_payment", **env)(state, lambda_context)
        with pytest.raises(StaleAttempt):
            load("ship_order", **env)(state, lambda_context)

    captures = [op for op in ledger.ops("payment") if op.get("status") == "captured"]
    shipments = [op for op in ledger.ops("carrier") if op.get("status") == "shipped"]
    assert (len(captures), len(shipments)) == (1, 1)
