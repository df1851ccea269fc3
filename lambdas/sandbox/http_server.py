"""The sandbox payment provider and carrier served over HTTP on 127.0.0.1, in-process.

The HTTPS adapters (``lambdas/order_domain/https_providers.py``) that prod uses talk to this
server in tests and local runs, so their code path (headers, Idempotency-Key, timeouts, retries,
status mapping, answer validation) is exercised against the same sandbox behaviour and ledger
the Lambda-invoked sandbox has. Routes follow the contract in the README ("Connecting a real
provider"); the sandbox's own answers are mapped to HTTP the way a card processor's API answers:
``idempotency_key_reused`` -> 422, ``provider_unavailable`` -> 503, other errors -> 400.

Like a real processor (docs/providers.md), a request whose idempotency key is still being processed
by an earlier request is answered **409** ``idempotency_key_in_use`` and not processed: the same key
as a POST, a lookup of that key, or a refund / cancel naming it. ``hold`` (tests) runs inside a
request's processing, so a test can keep a request in flight while another arrives.

Keys are kept for a bounded window (``key_window_seconds``; Stripe prunes keys after 24 hours,
Checkout.com's default window is 24 hours, Adyen keeps them at least 31 days): past it, a lookup of
the key answers 404 and a POST with it is processed as a new request (a second charge), as those
providers document. ``None`` (the default) keeps keys for the life of the run.

Why hand-written: a real provider's sandbox is not reachable here (no network but the package
registries), and the standard library's ThreadingHTTPServer is all it takes.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

HOST = "127.0.0.1"  # loopback only
MAX_BODY_BYTES = 1024 * 1024


#: What :func:`serve_sandbox` enters around each request's handling.
RequestScope = Callable[[], AbstractContextManager[Any]]
#: Called with (provider, request) while the request holds its key, before it is processed (tests).
Hold = Callable[[str, dict[str, Any]], None]


def _no_hold(provider: str, request: dict[str, Any]) -> None:
    del provider, request


#: Holds every live server also calls (the fault matrix's in-flight cells: :func:`holding`).
_EXTRA_HOLDS: list[Hold] = []
#: The servers now serving (the fault matrix's :func:`forget_keys`).
_LIVE: list[_Server] = []


@contextmanager
def holding(hold: Hold) -> Iterator[None]:
    """While active, every served sandbox also calls ``hold`` inside each request's processing."""
    _EXTRA_HOLDS.append(hold)
    try:
        yield
    finally:
        _EXTRA_HOLDS.remove(hold)


def forget_keys(prefix: str) -> int:
    """Every live server forgets the keys it has seen that start with ``prefix``, as if their window
    had passed (a lookup answers 404, a POST is a new request); returns how many were forgotten."""
    return sum(server.forget(prefix) for server in list(_LIVE))


@dataclass(frozen=True)
class ProviderEndpoints:
    """Where the served sandbox answers, and the API key it expects."""

    payment_url: str
    carrier_url: str
    api_key: str


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return  # no access log: the sandbox's own structured log lines say what happened

    def _answer(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _request(self) -> dict[str, Any] | None:
        if self.headers.get("Authorization") != f"Bearer {self.server.api_key}":
            self._answer(401, {"error": "unauthorized"})
            return None
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self._answer(413, {"error": "too_large"})
            return None
        try:
            body = json.loads(self.rfile.read(length) or b"{}") if length else {}
        except ValueError:
            self._answer(400, {"error": "invalid_json"})
            return None
        if not isinstance(body, dict):
            self._answer(400, {"error": "invalid_json"})
            return None
        return body

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def _route(self, method: str) -> None:
        body = self._request()
        if body is None:
            return
        parts = [unquote(p) for p in urlsplit(self.path).path.strip("/").split("/")]
        key = self.headers.get("Idempotency-Key")
        request: dict[str, Any] | None = None
        provider = parts[0] if parts else ""
        rest = parts[1:]
        if provider == "payment" and method == "POST" and rest == ["charges"]:
            request = {**body, "action": "charge", "idempotency_key": key}
        elif provider == "payment" and method == "GET" and len(rest) == 2 and rest[0] == "charges":
            request = {"action": "get", "idempotency_key": rest[1]}
        elif provider == "payment" and method == "POST" and rest == ["refunds"]:
            request = {**body, "action": "refund", "idempotency_key": key}
        elif provider == "carrier" and method == "POST" and rest == ["shipments"]:
            request = {**body, "action": "ship", "idempotency_key": key}
        elif provider == "carrier" and method == "GET" and len(rest) == 2 and rest[0] == "shipments":
            request = {"action": "get", "idempotency_key": rest[1]}
        elif provider == "carrier" and method == "POST" and len(rest) == 3 and rest[::2] == ["shipments", "cancel"]:
            request = {**body, "action": "cancel", "idempotency_key": rest[1]}
        if request is None:
            self._answer(404, {"error": "no such route"})
            return
        with self.server.processing(provider, request) as free:
            if not free:
                self._answer(409, {"error": "idempotency_key_in_use"})
                return
            self.server.hold(provider, request)
            for extra in list(_EXTRA_HOLDS):
                extra(provider, request)
            seen = self.server.windowed(provider, request)
            if seen is None:  # the key's window passed: the provider no longer knows it
                self._answer(404, {"error": "not_found"})
                return
            with self.server.request_scope():  # e.g. the provider's own AWS calls are not the pipeline's cost
                result = self.server.dispatch(provider, seen)
        self._answer(*_http(result))


def _http(result: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    status = result.get("status")
    if status == "not_found":
        return 404, {"error": "not_found"}
    if status != "error":
        return 200, result
    error = str(result.get("error"))
    if error == "idempotency_key_reused":
        return 422, {"error": error}
    if error == "provider_unavailable":
        return 503, {"error": error}
    if error == "internal_error":
        return 500, {"error": error}
    return 400, {"error": error}


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (its read timeout passed; the adapter retries with the same
        Idempotency-Key) is not the server's error; anything else is printed as usual."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)

    def __init__(
        self,
        ledger_table: str,
        api_key: str,
        request_scope: RequestScope,
        hold: Hold,
        key_window: tuple[float | None, Callable[[], float]] = (None, time.time),
    ) -> None:
        super().__init__((HOST, 0), _Handler)
        self.key_window_seconds, self.now = key_window
        self._first_seen: dict[tuple[str, str], float] = {}
        self._generation: dict[tuple[str, str], int] = {}
        self._forgotten: set[tuple[str, str]] = set()
        self.request_scope = request_scope
        self.hold = hold
        self._in_flight: set[tuple[str, str]] = set()
        self._in_flight_lock = threading.Lock()
        from lambda_resilience.correlation import correlation_scope, from_payload
        from order_domain.logs import get_logger
        from sandbox import carrier, payment
        from sandbox.ledger import Ledger

        self.api_key = api_key
        self._ledger = Ledger(ledger_table)
        self._handlers = {"payment": payment.handle, "carrier": carrier.handle}
        self._loggers = {name: get_logger(service=f"sandbox-{name}") for name in self._handlers}
        self._scope = correlation_scope
        self._cid = from_payload

    @contextmanager
    def processing(self, provider: str, request: dict[str, Any]) -> Iterator[bool]:
        """Claim the request's key while it is processed; False (claim nothing) if it, or the key it
        names (a refund's charge, a cancel's shipment), is in flight."""
        own = request.get("idempotency_key")
        named = {own, request.get("charge_idempotency_key"), request.get("shipment_idempotency_key")}
        keys = {(provider, str(k)) for k in named if k}
        claim = {(provider, str(own))} if own and request.get("action") != "get" else set()
        with self._in_flight_lock:
            if keys & self._in_flight:
                free = False
            else:
                free = True
                self._in_flight |= claim
        try:
            yield free
        finally:
            if free:
                with self._in_flight_lock:
                    self._in_flight -= claim

    def windowed(self, provider: str, request: dict[str, Any]) -> dict[str, Any] | None:
        """The request as the ledger sees it under the key window: a key seen longer ago than the
        window is forgotten (a lookup: None, answered 404; a POST: a new key generation, a new op)."""
        key = request.get("idempotency_key")
        if not key:
            return request
        slot, now = (provider, str(key)), self.now()
        first = self._first_seen.setdefault(slot, now)
        window = self.key_window_seconds
        if slot in self._forgotten or (window is not None and now - first > window):
            if request.get("action") == "get":
                return None
            self._forgotten.discard(slot)
            self._first_seen[slot] = now
            self._generation[slot] = self._generation.get(slot, 0) + 1
        generation = self._generation.get(slot, 0)
        return {**request, "idempotency_key": f"{key}#after-window-{generation}"} if generation else request

    def forget(self, prefix: str) -> int:
        """Treat the keys seen so far that start with ``prefix`` as past their window."""
        slots = {slot for slot in self._first_seen if slot[1].startswith(prefix)}
        self._forgotten |= slots
        return len(slots)

    def dispatch(self, provider: str, request: dict[str, Any]) -> dict[str, Any]:
        logger = self._loggers[provider]
        with self._scope(logger, self._cid(request)):
            try:
                result = self._handlers[provider](request, self._ledger)
            except Exception:  # the sandbox's own storage failed (e.g. throttled): a provider 5xx
                logger.exception(f"{provider} request failed", extra={"action": request.get("action")})
                return {"status": "error", "error": "internal_error"}
            logger.info(
                f"{provider} request",
                extra={
                    "action": request.get("action"),
                    "idempotency_key": request.get("idempotency_key"),
                    "status": result.get("status"),
                    "deduplicated": result.get("deduplicated"),
                },
            )
            return dict(result)


@contextmanager
def serve_sandbox(
    ledger_table: str,
    api_key: str | None = None,
    request_scope: RequestScope = contextlib.nullcontext,
    hold: Hold = _no_hold,
    key_window_seconds: float | None = None,
    now: Callable[[], float] = time.time,
) -> Iterator[ProviderEndpoints]:
    """Serve the sandbox on an ephemeral 127.0.0.1 port until the block exits.

    ``request_scope``: entered around each request's handling (the local run passes
    :func:`local_cloud.calls.outside_the_pipeline`, so the provider's AWS calls are not counted as the pipeline's).
    ``hold``: called while a request holds its idempotency key, before it is processed (tests keep a
    request in flight with it). ``key_window_seconds``: how long keys are kept (None: for the run),
    measured with ``now``.
    """
    key = api_key or secrets.token_hex(16)
    server = _Server(ledger_table, key, request_scope, hold, (key_window_seconds, now))
    thread = threading.Thread(target=server.serve_forever, name="sandbox-http", daemon=True)
    thread.start()
    _LIVE.append(server)
    origin = f"http://{HOST}:{server.server_address[1]}"
    try:
        yield ProviderEndpoints(payment_url=f"{origin}/payment", carrier_url=f"{origin}/carrier", api_key=key)
    finally:
        _LIVE.remove(server)
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
