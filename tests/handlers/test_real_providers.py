"""Issue 28, class "a request still in flight is treated as a failure" and "compensate only what you know".

Real processors answer 409 while a request with the same idempotency key is still being processed
(docs/providers.md): that is an unknown outcome, never a permanent PayloadMismatch. A compensation
acts only on a forward outcome it knows: a terminal order (COMPLETED) or a replaced attempt is left
alone whoever started the execution, a charge still in flight is waited for, and a capture we
recorded that the provider has forgotten (its key window passed) parks the order instead of ending
COMPENSATED with the money kept.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest

import order_domain.env as env_names
from lambda_resilience.classification import classify
from lambda_resilience.exceptions import PayloadMismatch, TransientStepError
from order_domain.errors import ProviderForgot, ProviderInFlight
from order_domain.https_providers import HttpsJsonClient, HttpsPaymentProvider
from order_domain.status import OrderStatus
from sandbox.http_server import ProviderEndpoints, serve_sandbox

from .conftest import REGION, LedgerView, Tables, present, scan


def _key(order: dict[str, Any], operation: str, attempt: int = 1) -> str:
    return f"{order['order_id']}#{operation}#attempt-{attempt}"


def _answering(status: int, body: dict[str, Any]) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (409, {"error": "idempotency_key_in_use"}, ProviderInFlight),
        (422, {"error": "idempotency_key_reused"}, PayloadMismatch),
    ],
)
def test_https_adapter_409_is_in_flight_and_only_a_reused_key_is_a_mismatch(status, body, expected):
    server = _answering(status, body)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        provider = HttpsPaymentProvider(HttpsJsonClient(url, lambda: "k", retries=0))
        with pytest.raises(expected) as raised:
            provider.charge(
                "o-9#charge-payment#attempt-1", order_id="o-9", amount_cents=1, currency="EUR", payment_token="t"
            )
    finally:
        server.shutdown()
        server.server_close()
    assert classify(raised.value) == ("transient" if status == 409 else "permanent")


class Gate:
    """Keeps the first charge request in flight at the provider until released."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, provider: str, request: dict[str, Any]) -> None:
        if provider == "payment" and request.get("action") == "charge" and not self.entered.is_set():
            self.entered.set()
            assert self.release.wait(10)


@pytest.fixture
def gate() -> Gate:
    return Gate()


@pytest.fixture
def held_sandbox(tables: Tables, gate: Gate) -> Iterator[ProviderEndpoints]:
    with serve_sandbox(tables.ledger, hold=gate) as endpoints:
        yield endpoints
    gate.release.set()


@pytest.fixture
def https_env(held_sandbox: ProviderEndpoints) -> dict[str, str]:
    sm = boto3.client("secretsmanager", region_name=REGION)
    secret = json.dumps({"api_key": held_sandbox.api_key})
    payment_arn = sm.create_secret(Name="test/payment-api-held", SecretString=secret)["ARN"]
    carrier_arn = sm.create_secret(Name="test/carrier-api-held", SecretString=secret)["ARN"]
    return {
        env_names.PAYMENT_PROVIDER_FUNCTION: "",
        env_names.CARRIER_FUNCTION: "",
        env_names.PAYMENT_API_URL: held_sandbox.payment_url,
        env_names.PAYMENT_API_SECRET_ARN: payment_arn,
        env_names.CARRIER_API_URL: held_sandbox.carrier_url,
        env_names.CARRIER_API_SECRET_ARN: carrier_arn,
    }


def test_in_flight_charge_is_retried_and_its_refund_waits_instead_of_cancelling_the_key(
    load, https_env, gate: Gate, order_factory, saga_input, seed_order, ledger: LedgerView, lambda_context
):
    """The first ChargePayment invocation's request is still being processed (its caller timed out);
    the retry is answered 409 and the compensation that follows must not cancel the key: the charge
    then captures, and the refund (once the provider answers) gives exactly that back."""
    charge, refund = load("charge_payment", **https_env), load("refund_payment", **https_env)
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    state = saga_input(order, "cid-in-flight")
    provider = HttpsPaymentProvider(HttpsJsonClient(https_env[env_names.PAYMENT_API_URL], lambda: "unused"))
    provider.http.api_key = lambda: json.loads(
        boto3.client("secretsmanager", region_name=REGION).get_secret_value(
            SecretId=https_env[env_names.PAYMENT_API_SECRET_ARN]
        )["SecretString"]
    )["api_key"]
    first = threading.Thread(
        target=lambda: provider.charge(
            _key(order, "charge-payment"),
            order_id=order["order_id"],
            amount_cents=3499,
            currency="EUR",
            payment_token=order["payment_token"],
        ),
        daemon=True,
    )
    first.start()
    assert gate.entered.wait(5)

    with pytest.raises(TransientStepError) as charged:
        charge(state, lambda_context)
    with pytest.raises(TransientStepError) as refunding:
        refund({**state, "error": {"Error": "TransientStepError", "Cause": "in flight"}}, lambda_context)

    assert isinstance(charged.value.__cause__, ProviderInFlight)
    assert isinstance(refunding.value.__cause__, ProviderInFlight)
    gate.release.set()
    first.join(5)
    op = ledger.op("payment", _key(order, "charge-payment"))
    assert op is not None and op["status"] == "captured"  # the key was never cancelled under it
    assert refund(state, lambda_context) == {"status": "refunded", "amount_cents": 3499}


@pytest.fixture
def completed(load, providers, order_factory, saga_input, seed_order, orders, lambda_context):
    """A COMPLETED order: charged, shipped, recorded."""
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    state = saga_input(order, "cid-completed")
    load("charge_payment")(state, lambda_context)
    load("ship_order")(state, lambda_context)  # records COMPLETED itself (decision 0024)
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPLETED.value
    return order, state


def test_compensations_refuse_a_completed_order_whoever_started_the_execution(
    load, completed, orders, ledger: LedgerView, inventory, lambda_context
):
    """A StartExecution with ``"compensate": true`` on a COMPLETED order, not through ``ops repair``."""
    order, state = completed
    repair = {**state, "compensate": True}
    before = scan(inventory.table)

    answers = [
        load(name)(repair, lambda_context) for name in ("cancel_shipment", "refund_payment", "release_inventory")
    ]

    assert [a["status"] for a in answers] == ["stale", "stale", "stale"]
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPLETED
    assert [op for op in ledger.ops() if op["action"] in ("refund", "cancel")] == []
    assert present(ledger.op("carrier", _key(order, "ship-order")))["status"] == "shipped"
    assert scan(inventory.table) == before


def test_compensation_of_a_replaced_attempt_does_nothing(
    load, providers, order_factory, saga_input, seed_order, orders, ledger: LedgerView, lambda_context
):
    """Attempt 1 was compensated and attempt 2 owns the order: a late RefundPayment of attempt 1
    (a duplicate invocation, a redrive) makes no provider call."""
    order = order_factory()
    seed_order(order, OrderStatus.COMPENSATED)
    orders.create({**order, "payment_attempt": 2, "payment_token": "tok_visa_2"}, "cid-2")

    answer = load("refund_payment")(saga_input(order), lambda_context)

    assert answer["status"] == "stale"
    assert ledger.requests("payment") == []


def test_refund_after_the_provider_forgot_the_charge_parks_rather_than_keeps_the_money(
    load, providers, order_factory, saga_input, seed_order, orders, tables: Tables, lambda_context
):
    """The provider keeps keys for a bounded window (Stripe: 24 h). A repair days later finds no charge
    by key although our record says it captured: never COMPENSATED with the money kept."""
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    state = saga_input(order)
    load("charge_payment")(state, lambda_context)
    ddb = boto3.client("dynamodb", region_name=REGION)
    key = _key(order, "charge-payment")
    ddb.delete_item(TableName=tables.ledger, Key={"pk": {"S": f"op#payment#{key}"}, "sk": {"S": "op"}})

    with pytest.raises(ProviderForgot):
        load("refund_payment")({**state, "compensate": True}, lambda_context)


def test_https_cancel_uses_its_own_idempotency_key_not_the_ship_key():
    """A carrier following "same key, different request -> error" would refuse a cancel sent with the
    ship request's key on another endpoint, every time."""
    from order_domain.https_providers import HttpsCarrier

    seen: list[tuple[str, str | None]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            seen.append((self.path, self.headers.get("Idempotency-Key")))
            data = json.dumps({"status": "cancelled"}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        carrier = HttpsCarrier(HttpsJsonClient(f"http://127.0.0.1:{server.server_address[1]}", lambda: "k"))
        carrier.cancel_shipment("o-1#ship-order#attempt-1", cancel_key="o-1#cancel-shipment#attempt-1")
    finally:
        server.shutdown()
        server.server_close()
    ((path, key),) = seen
    assert path.endswith("/cancel") and key == "o-1#cancel-shipment#attempt-1"


def test_a_repair_after_the_providers_key_window_parks_instead_of_keeping_the_money(
    load, tables: Tables, order_factory, saga_input, seed_order, lambda_context
):
    """The HTTP sandbox keeps keys for a bounded window (Stripe: 24 hours): a compensation days later
    finds no charge by key. Our record says attempt 1 captured: park (ProviderForgot), never cancel
    the key and end COMPENSATED with the money kept."""
    clock = [1_000_000.0]
    with serve_sandbox(tables.ledger, key_window_seconds=24 * 3600, now=lambda: clock[0]) as endpoints:
        sm = boto3.client("secretsmanager", region_name=REGION)
        arn = sm.create_secret(Name="test/window", SecretString=json.dumps({"api_key": endpoints.api_key}))["ARN"]
        env = {
            env_names.PAYMENT_PROVIDER_FUNCTION: "",
            env_names.CARRIER_FUNCTION: "",
            env_names.PAYMENT_API_URL: endpoints.payment_url,
            env_names.PAYMENT_API_SECRET_ARN: arn,
            env_names.CARRIER_API_URL: endpoints.carrier_url,
            env_names.CARRIER_API_SECRET_ARN: arn,
        }
        order = order_factory()
        seed_order(order, OrderStatus.INVENTORY_RESERVED)
        state = saga_input(order)
        assert load("charge_payment", **env)(state, lambda_context)["status"] == "captured"
        provider = HttpsPaymentProvider(HttpsJsonClient(endpoints.payment_url, lambda: endpoints.api_key))
        assert provider.find_charge(_key(order, "charge-payment")) is not None
        clock[0] += 3 * 24 * 3600  # an operator's repair three days later

        assert provider.find_charge(_key(order, "charge-payment")) is None
        with pytest.raises(ProviderForgot):
            load("refund_payment", **env)({**state, "compensate": True}, lambda_context)
