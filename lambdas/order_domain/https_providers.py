"""The HTTPS adapters of the provider ports: a real payment provider's and carrier's JSON APIs.

The contract (README "Connecting a real provider"): every state-changing request is a POST with
an ``Idempotency-Key`` header (our business key, ``order-123#charge-payment#attempt-1``), the
usual contract of card processors' APIs: the same key with the same body returns the first
answer; the same key while its first request is still being processed is answered 409 (outcome
unknown); the same key with another body is refused with 422 ``idempotency_key_reused``.
Authentication: ``Authorization: Bearer <api_key>``, the key read from AWS Secrets Manager
(``{"api_key": "..."}``), cached for :data:`KEY_TTL_SECONDS` and read again at once, and the request sent
again once, when the provider answers 401 (a rotated key: docs/deploy.md, "Rotate a provider key").

Failures are classified at the edge: 409 -> :class:`ProviderInFlight` (transient: the first
request with this key is still in flight, its outcome is unknown); 422 ``idempotency_key_reused``
-> :class:`PayloadMismatch` (permanent); any other 4xx -> :class:`ProviderRejected` (permanent);
429, 5xx, timeouts, connection errors and answers that are not what the contract says ->
:class:`ProviderUnavailable` (transient: the saga retries with
the same key, which the provider deduplicates). urllib3 (already loaded by botocore, so no extra
cold start) retries the same request with the same key on 429/5xx and connection errors.

**Within the invocation's time.** A retry (its wait, a ``Retry-After`` included, plus one more request's
connect and read timeouts) is made only if it fits in the invocation's remaining time less
:data:`RESERVE_SECONDS`; otherwise the request ends at once as :class:`ProviderUnavailable` (transient: the
step's own retry comes later, with the same key). Stripe asks clients to back off on 429
(https://docs.stripe.com/rate-limits); a ``Retry-After`` longer than the function has left would have the
function killed mid-request instead (timeout: the outcome unknown, the whole invocation lost). Outside an
invocation (no remaining time known) a ``Retry-After`` above :data:`MAX_RETRY_AFTER_SECONDS` is not waited for.

Only urllib3 API common to 1.26 and 2.x: deployed with AWS's OpenTelemetry layer, the runtime's own
urllib3 (1.26.19 or 2.x, whatever the image bundles) comes before our layer's on the import path
(``tests/handlers/test_import_path.py`` runs this adapter on both).
"""

from __future__ import annotations

import ipaddress
import json
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import quote, urlsplit

import urllib3
from urllib3.util import Retry, Timeout

from lambda_resilience.correlation import current_correlation_id
from lambda_resilience.exceptions import ConfigurationError, PayloadMismatch
from lambda_resilience.idempotency.operation import invocation_seconds_left
from lambda_resilience.tracing import inject
from order_domain.errors import ProviderInFlight, ProviderRejected, ProviderUnavailable
from order_domain.ports import Charge, Refund, Shipment, parse_charge, parse_refund, parse_shipment

#: Seconds to establish a connection / to wait for an answer. A read timeout leaves the outcome
#: unknown: the retry (same key) or the compensation (lookup by key) settles it.
DEFAULT_CONNECT_TIMEOUT = 3.05
DEFAULT_READ_TIMEOUT = 10.0
#: Retries of the same request (same Idempotency-Key) inside one invocation.
DEFAULT_RETRIES = 2
MAX_ANSWER_BYTES = 64 * 1024
#: Connections kept per provider host (a saga step sends one request at a time; the sweeper asks for as many as
#: the orders it reconciles at once: order_domain.wiring.sweeper_service).
DEFAULT_POOL_SIZE = 10
_RETRY_STATUSES = (429, 500, 502, 503, 504)
#: How long a warm execution environment keeps the provider's API key before reading the secret again: the
#: default TTL of AWS's Parameters and Secrets Lambda Extension, 300 s
#: (https://docs.aws.amazon.com/lambda/latest/dg/with-secrets-manager.html). A rotated key reaches every
#: environment within it; a 401 reads it at once (:meth:`HttpsJsonClient.request`).
KEY_TTL_SECONDS = 300.0
#: Left to the function after the last request (its own writes and answer).
RESERVE_SECONDS = 2.0
#: The longest Retry-After waited for when the invocation's remaining time is unknown.
MAX_RETRY_AFTER_SECONDS = 5.0
T = TypeVar("T")


class RetryBeyondBudget(urllib3.exceptions.HTTPError):
    """A retry would not fit in the invocation's remaining time: the request ends, transient."""


def _budgeted_retry(seconds_left: Callable[[], float | None], attempt_seconds: float) -> type[Retry]:
    """A :class:`Retry` whose every wait (``Retry-After`` or backoff) plus one more attempt fits the budget.
    A class per client (urllib3's ``Retry.new`` rebuilds the instance from its own parameters)."""

    class BudgetedRetry(Retry):
        def sleep(self, response: Any = None) -> None:
            after = self.get_retry_after(response) if response is not None else None
            wait = after if after is not None else self.get_backoff_time()
            left = seconds_left()
            if left is None:
                if after is not None and after > MAX_RETRY_AFTER_SECONDS:
                    raise RetryBeyondBudget(f"Retry-After {after:.0f} s above {MAX_RETRY_AFTER_SECONDS:.0f} s")
            elif wait + attempt_seconds + RESERVE_SECONDS > left:
                raise RetryBeyondBudget(f"a retry after {wait:.1f} s does not fit the {left:.1f} s left")
            super().sleep(response)

    return BudgetedRetry


def check_base_url(url: str) -> str:
    """``https://...``, or ``http://`` to a loopback address (a provider on this machine: the local run)."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return url.rstrip("/")
    if parts.scheme == "http" and parts.hostname:
        host = parts.hostname
        try:
            loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if loopback:
            return url.rstrip("/")
    raise ConfigurationError(f"provider URL must be https:// (http:// only to a loopback address), got {url!r}")


class SecretApiKey:
    """The provider's API key from Secrets Manager (``{"api_key": "..."}``), cached for ``ttl_seconds``.

    Not Powertools' ``parameters.get_secret(max_age=...)``, the field's tool for this: its module is not on the
    saga steps' cold-start import list (tests/handlers/test_cold_start_imports.py), and the two things asked of
    the cache, a TTL and one forced refresh on a 401 (``force_fetch``), are these twenty lines.
    """

    def __init__(
        self,
        secret_arn: str,
        *,
        client: Any,
        ttl_seconds: float = KEY_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``client``: the Secrets Manager client (GetSecretValue on first use, after the TTL, on refresh)."""
        if not secret_arn:
            raise ConfigurationError("a provider secret ARN is required with a provider URL")
        self.secret_arn = secret_arn
        self.client = client
        self.ttl_seconds = ttl_seconds
        self.clock = clock
        self._value: str | None = None
        self._read_at = 0.0
        self._lock = threading.Lock()

    def __call__(self) -> str:
        value = self._value
        if value is not None and self.clock() - self._read_at < self.ttl_seconds:
            return value
        with self._lock:
            if self._value is None or self.clock() - self._read_at >= self.ttl_seconds:
                self._value, self._read_at = self._read(), self.clock()
            return self._value

    def refresh(self, rejected: str) -> str:
        """The key read again now, unless another thread already replaced ``rejected`` (the key refused)."""
        with self._lock:
            if self._value is None or self._value == rejected:
                self._value, self._read_at = self._read(), self.clock()
            return self._value

    def _read(self) -> str:
        secret = self.client.get_secret_value(SecretId=self.secret_arn)
        try:
            key = json.loads(secret["SecretString"])["api_key"]
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigurationError(f'secret {self.secret_arn} must be JSON {{"api_key": "..."}}') from exc
        if not isinstance(key, str) or not key:
            raise ConfigurationError(f"secret {self.secret_arn} has an empty api_key")
        return key


class HttpsJsonClient:
    """JSON over HTTPS with the provider contract's headers, timeouts, retries and error mapping."""

    def __init__(
        self,
        base_url: str,
        api_key: Callable[[], str],
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        seconds_left: Callable[[], float | None] = invocation_seconds_left,
        pool_size: int = DEFAULT_POOL_SIZE,
    ) -> None:
        """``seconds_left``: the invocation's remaining time (default: the running step's Lambda context);
        ``pool_size``: connections kept to the provider (one more request at once opens one, used once)."""
        self.base_url = check_base_url(base_url)
        self.api_key = api_key
        self.seconds_left = seconds_left
        retry = _budgeted_retry(seconds_left, connect_timeout + read_timeout)(
            total=retries,
            connect=retries,
            read=retries,
            status=retries,
            redirect=0,
            backoff_factor=0.2,  # no backoff_jitter: urllib3 2.x only (see the module docstring)
            status_forcelist=_RETRY_STATUSES,
            allowed_methods=None,  # POSTs too: the Idempotency-Key makes a repeat harmless
            respect_retry_after_header=True,
            raise_on_status=False,
        )
        self.pool = urllib3.PoolManager(
            timeout=Timeout(connect=connect_timeout, read=read_timeout), retries=retry, maxsize=pool_size, block=False
        )

    def request(self, method: str, path: str, *, key: str | None = None, body: dict[str, Any] | None = None) -> Any:
        """The answer's JSON, or None for a 404 on a GET. A 401 reads the API key again and sends once more."""
        api_key = self.api_key()
        status, data = self._send(method, path, api_key, key, body)
        refresh = getattr(self.api_key, "refresh", None)
        if status == 401 and refresh is not None:
            status, data = self._send(method, path, refresh(api_key), key, body)
        return self._answer(method, path, key, status, data)

    def _send(
        self, method: str, path: str, api_key: str, key: str | None, body: dict[str, Any] | None
    ) -> tuple[int, bytes]:
        cid = current_correlation_id()
        headers = {
            "Authorization": f"Bearer {api_key}",
            "Accept": "application/json",
            "Content-Type": "application/json",
        }
        if cid:
            headers["X-Correlation-Id"] = quote(cid, safe="")
        if key is not None:
            headers["Idempotency-Key"] = key
        # W3C trace context: the provider's spans join the order's trace (the urllib3
        # instrumentation, where the layer installs it, replaces it with its client span's).
        inject(headers)
        payload = None if body is None else json.dumps({**body, "correlation_id": cid}).encode()
        url = f"{self.base_url}{path}"
        try:
            response = self.pool.request(method, url, body=payload, headers=headers, preload_content=False)
            data = response.read(MAX_ANSWER_BYTES + 1)
            response.release_conn()
        except urllib3.exceptions.HTTPError as exc:  # timeouts, connection errors, retries exhausted
            raise ProviderUnavailable(f"{method} {path}: {type(exc).__name__}") from exc
        return int(response.status), data

    def _answer(self, method: str, path: str, key: str | None, status: int, data: bytes) -> Any:
        if status == 404 and method == "GET":
            return None
        if status == 409:  # in flight: never a failure, the first request may still move money
            raise ProviderInFlight(f"{method} {path}: a request with this idempotency key is still in flight")
        if status == 422 and _error_code(data) == KEY_REUSED:
            raise PayloadMismatch(f"{method} {path}: idempotency key {key} was used with another request")
        if status in _RETRY_STATUSES or status >= 500:
            raise ProviderUnavailable(f"{method} {path}: HTTP {status}")
        if 400 <= status < 500:
            raise ProviderRejected(f"{method} {path}: HTTP {status}")
        if not 200 <= status < 300 or len(data) > MAX_ANSWER_BYTES:
            raise ProviderUnavailable(f"{method} {path}: unexpected HTTP {status} or answer size")
        try:
            return json.loads(data)
        except ValueError as exc:
            raise ProviderUnavailable(f"{method} {path}: answer is not JSON") from exc


#: The error code a provider answers (HTTP 422) for the same key with a different request.
KEY_REUSED = "idempotency_key_reused"


def _error_code(data: bytes) -> str | None:
    """The answer's ``error`` code, if it is a JSON object with one (never its free text)."""
    try:
        answer = json.loads(data)
    except ValueError:
        return None
    code = answer.get("error") if isinstance(answer, dict) else None
    return code if isinstance(code, str) else None


def _validated(parse: Callable[[Any], T], answer: Any, what: str) -> T:
    try:
        return parse(answer)
    except ValueError as exc:
        raise ProviderUnavailable(f"{what}: answer does not match the contract ({exc})") from exc


def _path_key(key: str) -> str:
    return quote(key, safe="")


class HttpsPaymentProvider:
    """:class:`~order_domain.ports.PaymentProvider` on ``POST /charges``, ``GET /charges/{key}``, ``POST /refunds``."""

    def __init__(self, http: HttpsJsonClient) -> None:
        self.http = http

    def charge(self, key: str, *, order_id: str, amount_cents: int, currency: str, payment_token: str) -> Charge:
        body = {
            "order_id": order_id,
            "amount_cents": amount_cents,
            "currency": currency,
            "payment_token": payment_token,
        }
        answer = self.http.request("POST", "/charges", key=key, body=body)
        return _validated(parse_charge, answer, "charge")

    def find_charge(self, key: str) -> Charge | None:
        answer = self.http.request("GET", f"/charges/{_path_key(key)}")
        return None if answer is None else _validated(parse_charge, answer, "charge lookup")

    def find_refund(self, key: str) -> Refund | None:
        """``GET /refunds/{key}``: the refund with its ``settlement`` (docs/providers.md#settlement)."""
        answer = self.http.request("GET", f"/refunds/{_path_key(key)}")
        return None if answer is None else _validated(parse_refund, answer, "refund lookup")

    def refund(self, key: str, *, charge_key: str, order_id: str) -> Refund:
        body = {"charge_idempotency_key": charge_key, "order_id": order_id}
        answer = self.http.request("POST", "/refunds", key=key, body=body)
        return _validated(parse_refund, answer, "refund")


class HttpsCarrier:
    """:class:`~order_domain.ports.Carrier` on ``POST /shipments``, ``GET /shipments/{key}``, ``POST .../cancel``."""

    def __init__(self, http: HttpsJsonClient) -> None:
        self.http = http

    def ship(self, key: str, *, order_id: str, address: dict[str, Any], items: list[dict[str, Any]]) -> Shipment:
        body = {"order_id": order_id, "address": address, "items": items}
        answer = self.http.request("POST", "/shipments", key=key, body=body)
        return _validated(parse_shipment, answer, "shipment")

    def find_shipment(self, key: str) -> Shipment | None:
        answer = self.http.request("GET", f"/shipments/{_path_key(key)}")
        return None if answer is None else _validated(parse_shipment, answer, "shipment lookup")

    def cancel_shipment(self, key: str, *, cancel_key: str) -> Shipment:
        """The contract: the answer is the shipment after the request: ``cancelled`` (recalled, or the
        key cancelled before any ship arrived), ``rejected`` (nothing shipped), or ``shipped`` when the
        carrier can no longer recall the parcel (the step raises ShipmentNotCancellable on it)."""
        # Its own Idempotency-Key: the ship key on another endpoint is "same key, different request".
        answer = self.http.request("POST", f"/shipments/{_path_key(key)}/cancel", key=cancel_key, body={})
        return _validated(parse_shipment, answer, "shipment cancel")
