"""The HTTPS provider adapters (prod's code path) against the sandbox served over HTTP on 127.0.0.1.

The steps run with ``PAYMENT_API_URL`` / ``CARRIER_API_URL`` and their secrets' ARNs, exactly as
the prod stack configures them; the API key is read from Secrets Manager (moto).
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

import order_domain.env as env_names
from lambda_resilience.classification import classify
from lambda_resilience.exceptions import ConfigurationError, PayloadMismatch, TransientStepError
from order_domain.errors import PaymentDeclined, ProviderRejected, ProviderUnavailable
from order_domain.https_providers import HttpsJsonClient, HttpsPaymentProvider, check_base_url
from order_domain.status import OrderStatus
from sandbox.http_server import ProviderEndpoints, serve_sandbox
from tests.handlers.conftest import present

from .conftest import REGION, LedgerView, LogCapture, Tables


@pytest.fixture
def sandbox_http(tables: Tables) -> Iterator[ProviderEndpoints]:
    with serve_sandbox(tables.ledger) as endpoints:
        yield endpoints


@pytest.fixture
def https_env(sandbox_http: ProviderEndpoints) -> dict[str, str]:
    """What the prod stack gives charge/refund/ship: URLs and secret ARNs, no sandbox function."""
    sm = boto3.client("secretsmanager", region_name=REGION)
    secret = json.dumps({"api_key": sandbox_http.api_key})
    payment_arn = sm.create_secret(Name="test/payment-api", SecretString=secret)["ARN"]
    carrier_arn = sm.create_secret(Name="test/carrier-api", SecretString=secret)["ARN"]
    return {
        env_names.PAYMENT_PROVIDER_FUNCTION: "",
        env_names.CARRIER_FUNCTION: "",
        env_names.PAYMENT_API_URL: sandbox_http.payment_url,
        env_names.PAYMENT_API_SECRET_ARN: payment_arn,
        env_names.CARRIER_API_URL: sandbox_http.carrier_url,
        env_names.CARRIER_API_SECRET_ARN: carrier_arn,
    }


KEY = "o-1#charge-payment#attempt-1"


def _key(order: dict[str, Any], operation: str) -> str:
    return f"{order['order_id']}#{operation}#attempt-1"


def test_https_charge_then_refund_moves_money_once_through_the_adapter(
    load, https_env, order_factory, saga_input, seed_order, ledger: LedgerView, lambda_context, logs: LogCapture
):
    charge, refund = load("charge_payment", **https_env), load("refund_payment", **https_env)
    order = order_factory(payment_token="tok_visa_https")
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    state = saga_input(order, "cid-https")

    charged = charge(state, lambda_context)
    again = charge(state, lambda_context)  # duplicate: our idempotency record answers
    refunded = refund(state, lambda_context)

    assert charged == again and charged["status"] == "captured" and charged["amount_cents"] == 3499
    assert refunded == {"status": "refunded", "amount_cents": 3499}
    op = ledger.op("payment", _key(order, "charge-payment"))
    assert op is not None and op["captured_cents"] == 3499
    requests = ledger.requests("payment", _key(order, "charge-payment"))
    # one charge; the refund first looks the charge up by its key (GET /charges/{key})
    assert [r["action"] for r in requests] == ["charge", "get"]
    assert requests[0]["correlation_id"] == "cid-https"
    assert logs.find("payment request", correlation_id="cid-https")


def test_https_ship_goes_through_the_carrier_adapter(
    load, https_env, order_factory, saga_input, seed_order, ledger: LedgerView, lambda_context, logs
):
    ship = load("ship_order", **https_env)
    order = order_factory()
    seed_order(order, OrderStatus.PAYMENT_CHARGED)

    result = ship(saga_input(order), lambda_context)

    assert result["status"] == "shipped" and result["tracking_id"].startswith("trk_")
    assert present(ledger.op("carrier", _key(order, "ship-order")))["status"] == "shipped"


def test_https_declined_card_is_payment_declined(
    load, https_env, order_factory, saga_input, seed_order, lambda_context, logs
):
    charge = load("charge_payment", **https_env)
    order = order_factory(payment_token="tok_decline_https")
    seed_order(order, OrderStatus.INVENTORY_RESERVED)

    with pytest.raises(PaymentDeclined):
        charge(saga_input(order), lambda_context)


def test_https_provider_503_is_retried_with_the_same_key_inside_one_call(
    load, https_env, order_factory, saga_input, seed_order, ledger: LedgerView, lambda_context, logs
):
    """tok_refund_flaky: the sandbox answers the first two refund requests 503; urllib3 retries."""
    charge, refund = load("charge_payment", **https_env), load("refund_payment", **https_env)
    order = order_factory(payment_token="tok_refund_flaky_https")
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    charge(saga_input(order), lambda_context)

    refunded = refund(saga_input(order), lambda_context)

    assert refunded["status"] == "refunded"
    requests = ledger.requests("payment", _key(order, "refund-payment"))
    assert [r["outcome"] for r in requests] == ["error", "error", "refunded"]  # one key, three tries


def test_https_provider_always_503_is_transient(
    load, https_env, order_factory, saga_input, seed_order, lambda_context, logs
):
    charge, refund = load("charge_payment", **https_env), load("refund_payment", **https_env)
    order = order_factory(payment_token="tok_refund_broken_https")
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    charge(saga_input(order), lambda_context)

    with pytest.raises(TransientStepError) as raised:
        refund(saga_input(order), lambda_context)

    assert isinstance(raised.value.__cause__, ProviderUnavailable)


def test_https_wrong_api_key_is_rejected_as_permanent(aws, sandbox_http: ProviderEndpoints):
    provider = HttpsPaymentProvider(HttpsJsonClient(sandbox_http.payment_url, lambda: "wrong-key"))

    with pytest.raises(ProviderRejected) as raised:
        provider.charge(
            "o-1#charge-payment#attempt-1", order_id="o-1", amount_cents=1, currency="EUR", payment_token="t"
        )

    assert classify(raised.value) == "permanent"


def test_https_same_key_with_another_amount_is_payload_mismatch(aws, sandbox_http: ProviderEndpoints):
    provider = HttpsPaymentProvider(HttpsJsonClient(sandbox_http.payment_url, lambda: sandbox_http.api_key))
    key = "o-2#charge-payment#attempt-1"
    provider.charge(key, order_id="o-2", amount_cents=100, currency="EUR", payment_token="tok_visa")

    with pytest.raises(PayloadMismatch):
        provider.charge(key, order_id="o-2", amount_cents=999, currency="EUR", payment_token="tok_visa")
    assert present(provider.find_charge(key)).captured_cents == 100  # lookup by key
    assert provider.find_charge("o-2#charge-payment#attempt-9") is None


def test_https_read_timeout_is_transient():
    """A provider that accepts the connection and never answers: the outcome is unknown -> transient."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        provider = HttpsPaymentProvider(HttpsJsonClient(url, lambda: "k", read_timeout=0.2, retries=1))
        with pytest.raises(ProviderUnavailable) as raised:
            provider.charge(
                "o-3#charge-payment#attempt-1", order_id="o-3", amount_cents=1, currency="EUR", payment_token="t"
            )
        assert classify(raised.value) == "transient"
        assert len(accepted) == 2  # the same request was tried twice (one retry)
    finally:
        stop.set()
        thread.join(timeout=2)
        for conn in accepted:
            conn.close()
        listener.close()


@pytest.mark.parametrize("url", ["http://pay.example.com", "ftp://127.0.0.1", "https://", "127.0.0.1:80"])
def test_https_base_url_must_be_https_or_loopback_http(url):
    with pytest.raises(ConfigurationError):
        check_base_url(url)


@pytest.mark.parametrize("url", ["https://pay.example.com/v1", "http://127.0.0.1:8080/payment", "http://localhost:1"])
def test_https_base_url_accepted(url):
    assert check_base_url(url) == url.rstrip("/")


def test_https_secret_without_api_key_is_a_configuration_error(
    load, https_env, order_factory, saga_input, seed_order, lambda_context, logs
):
    sm = boto3.client("secretsmanager", region_name=REGION)
    bad = sm.create_secret(Name="test/bad", SecretString=json.dumps({"token": "x"}))["ARN"]
    charge = load("charge_payment", **{**https_env, env_names.PAYMENT_API_SECRET_ARN: bad})
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)

    with pytest.raises(ConfigurationError):
        charge(saga_input(order), lambda_context)


# -- settlement (issue 40, point 5) -----------------------------------------------------------------------


def test_https_refund_pending_parses() -> None:
    from order_domain.ports import PENDING_REFUND, parse_refund

    assert parse_refund({"status": "pending", "amount_cents": 100}).status == PENDING_REFUND


def _serve_429(retry_after: str, then_ok: bool) -> tuple[Any, list[float]]:
    """A loopback HTTP server answering 429 with ``Retry-After`` (then 200 when ``then_ok``)."""
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen: list[float] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(time.monotonic())
            ok = then_ok and len(seen) > 1
            body = json.dumps({"status": "captured", "captured_cents": 1} if ok else {"error": "rate_limited"})
            self.send_response(200 if ok else 429)
            if not ok:
                self.send_header("Retry-After", retry_after)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, seen


def test_https_retry_after_beyond_the_remaining_time_is_transient_at_once() -> None:
    """A 429 asking for 60 s in an invocation with 25 s left: not waited for (the function would time out)."""
    import time

    server, seen = _serve_429("60", then_ok=False)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        provider = HttpsPaymentProvider(HttpsJsonClient(url, lambda: "k", seconds_left=lambda: 25.0))
        started = time.monotonic()
        with pytest.raises(ProviderUnavailable) as raised:
            provider.find_charge("o-9#charge-payment#attempt-1")
        assert time.monotonic() - started < 5 and len(seen) == 1
        assert classify(raised.value) == "transient"
    finally:
        server.shutdown()


def test_https_retry_after_within_the_remaining_time_is_honoured() -> None:
    server, seen = _serve_429("1", then_ok=True)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        provider = HttpsPaymentProvider(HttpsJsonClient(url, lambda: "k", seconds_left=lambda: 25.0))
        assert present(provider.find_charge("o-9#charge-payment#attempt-1")).captured_cents == 1
        assert len(seen) == 2 and seen[1] - seen[0] >= 0.9
    finally:
        server.shutdown()


def test_https_sweeper_reconciles_orders_at_once_each_lookup_under_its_orders_correlation_id(
    load, https_env, order_factory, seed_order, ledger: LedgerView, lambda_context, logs: LogCapture, monkeypatch
):
    """Against HTTPS providers the sweeper reconciles ``CAPACITY.workers`` orders at once
    (order_domain.reconcile_sizing): every order checked, each lookup sent under its own order's correlation ID
    (the ``X-Correlation-Id`` the client sets), whichever thread sends it."""
    import inspect

    from lambda_resilience.correlation import current_correlation_id
    from order_domain.reconcile_sizing import CAPACITY

    sent: list[tuple[str, str | None, str]] = []
    send = HttpsJsonClient._send

    def recorded(self, method, path, *args, **kwargs):
        sent.append((path, current_correlation_id(), threading.current_thread().name))
        return send(self, method, path, *args, **kwargs)

    monkeypatch.setattr(HttpsJsonClient, "_send", recorded)
    sweeper = load("sweeper", **https_env)
    service = inspect.unwrap(sweeper).__globals__["sweeper"]
    assert service.workers == CAPACITY.workers > 1
    for provider in (service.payments, service.carrier):  # a connection kept for each worker
        assert provider.http.pool.connection_pool_kw["maxsize"] == CAPACITY.workers
    orders = [order_factory() for _ in range(6)]
    for order in orders:
        seed_order(order, OrderStatus.COMPLETED, correlation_id=f"cid-{order['order_id']}")

    result = sweeper({}, lambda_context)

    assert result["reconciled"] == sorted(o["order_id"] for o in orders) and result["errors"] == []
    assert len({thread for _, _, thread in sent}) > 1
    for order in orders:
        (lookup,) = ledger.requests("payment", _key(order, "charge-payment"))
        assert lookup["action"] == "get"
        mine = [cid for path, cid, _ in sent if order["order_id"] in path]
        assert mine == [f"cid-{order['order_id']}"] * 2  # the charge and the shipment lookup


def test_https_sweeper_lookups_retry_only_within_the_sweeps_remaining_time(
    load, https_env, order_factory, seed_order, lambda_context, logs: LogCapture, monkeypatch
):
    """The sweeper is no idempotent step (no invocation registered for the client's retry budget): its clients
    read the sweep's own remaining time, in every worker thread, so a retry or a ``Retry-After`` that does not fit
    ends the lookup at once (transient, the next sweep) instead of running the sweep past its timeout."""
    import inspect

    budgets: list[float | None] = []
    send = HttpsJsonClient._send

    def recorded(self, method, path, *args, **kwargs):
        budgets.append(self.seconds_left())
        return send(self, method, path, *args, **kwargs)

    monkeypatch.setattr(HttpsJsonClient, "_send", recorded)
    sweeper = load("sweeper", **https_env)
    service = inspect.unwrap(sweeper).__globals__["sweeper"]
    for order in [order_factory() for _ in range(4)]:
        seed_order(order, OrderStatus.COMPLETED)

    sweeper({}, lambda_context)

    assert len(budgets) == 8
    assert all(b is not None and 0 < b <= 300 for b in budgets)
    assert service.payments.http.seconds_left() is None  # outside a sweep: no budget known
