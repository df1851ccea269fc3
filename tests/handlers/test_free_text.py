"""Issue 28, class "free text from outside": only allow-listed codes, never a provider's free-text
``reason`` or a body's float literal, reach exceptions (hence execution histories, ``last_error``,
needs-attention messages and logs) and DLQ attributes."""

from __future__ import annotations

import json

import boto3
import pytest

import order_domain.env as env_names
from order_domain.errors import InvalidOrder, PaymentDeclined
from order_domain.model import parse_order
from order_domain.ports import parse_charge, parse_refund, parse_shipment
from order_domain.status import OrderStatus

from .conftest import REGION, LogCapture
from .test_real_providers import _answering

SECRET_TEXT = "Ada Lovelace card 4111111111111111 at 1 Analytical Way"


def test_provider_reason_outside_the_allow_list_is_replaced_by_a_code():
    assert parse_charge({"status": "declined", "reason": SECRET_TEXT}).reason == "unlisted"
    assert parse_charge({"status": "declined", "reason": "card_declined"}).reason == "card_declined"
    assert parse_shipment({"status": "rejected", "reason": SECRET_TEXT}).reason == "unlisted"
    assert parse_shipment({"status": "shipped", "reason": "handed_over"}).reason == "handed_over"
    assert parse_refund({"status": "refunded", "amount_cents": 1}).status == "refunded"


def test_a_declined_charge_with_free_text_keeps_it_out_of_the_error_and_the_logs(
    load, order_factory, saga_input, seed_order, lambda_context, logs: LogCapture, capsys
):
    server = _answering(200, {"status": "declined", "reason": SECRET_TEXT, "amount_cents": 3499})
    try:
        sm = boto3.client("secretsmanager", region_name=REGION)
        arn = sm.create_secret(Name="test/free-text", SecretString=json.dumps({"api_key": "k"}))["ARN"]
        url = f"http://127.0.0.1:{server.server_address[1]}"
        env = {
            env_names.PAYMENT_PROVIDER_FUNCTION: "",
            env_names.CARRIER_FUNCTION: "",
            env_names.PAYMENT_API_URL: url,
            env_names.PAYMENT_API_SECRET_ARN: arn,
            env_names.CARRIER_API_URL: url,
            env_names.CARRIER_API_SECRET_ARN: arn,
        }
        charge = load("charge_payment", **env)
        order = order_factory()
        seed_order(order, OrderStatus.INVENTORY_RESERVED)
        with pytest.raises(PaymentDeclined) as raised:
            charge(saga_input(order), lambda_context)
    finally:
        server.shutdown()
        server.server_close()
    assert "4111" not in str(raised.value) and "Lovelace" not in str(raised.value)
    assert "unlisted" in str(raised.value)
    assert "4111" not in capsys.readouterr().out


def test_a_float_literal_from_the_body_is_never_quoted():
    with pytest.raises(InvalidOrder) as raised:
        parse_order('{"order_id": "o-1", "payment_token": 4111111111111111.25}')
    assert "4111" not in str(raised.value)
    assert "integers" in str(raised.value)
