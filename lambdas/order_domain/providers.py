"""The Lambda adapters of the provider ports: a provider and a carrier deployed as Lambda functions in
the account, called with ``lambda:InvokeFunction`` (dev wires them to the sandbox functions; prod
uses the HTTPS adapters and deploys no provider function)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from lambda_resilience.correlation import current_correlation_id
from lambda_resilience.exceptions import PayloadMismatch
from order_domain.errors import ProviderInFlight, ProviderUnavailable
from order_domain.ports import Charge, Refund, Shipment, parse_charge, parse_refund, parse_shipment

T = TypeVar("T")


class ProviderClient:
    """Synchronous JSON request/response to a provider function, correlation ID included."""

    def __init__(self, function_name: str, *, client: Any) -> None:
        """``client``: the Lambda client."""
        self.function_name = function_name
        self.lambda_client = client

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        body = {**request, "correlation_id": current_correlation_id()}
        try:
            response = self.lambda_client.invoke(
                FunctionName=self.function_name, InvocationType="RequestResponse", Payload=json.dumps(body).encode()
            )
            payload = json.loads(response["Payload"].read() or b"{}")
        except (ClientError, BotoCoreError, json.JSONDecodeError) as exc:
            raise ProviderUnavailable(f"{self.function_name} call failed: {exc}") from exc
        if response.get("FunctionError"):  # the error type is a class name; its message is not ours to log
            raise ProviderUnavailable(f"{self.function_name} failed: {_code(payload.get('errorType'))}")
        if payload.get("status") == "error":
            if payload.get("error") == "idempotency_key_reused":
                raise PayloadMismatch(f"provider rejected reuse of key {request.get('idempotency_key')}")
            if payload.get("error") == "idempotency_key_in_use":
                raise ProviderInFlight(f"a request with key {request.get('idempotency_key')} is still in flight")
            raise ProviderUnavailable(f"provider error: {_code(payload.get('error'))}")
        return dict(payload)

    def parsed(self, request: dict[str, Any], parse: Callable[[Any], T]) -> T:
        answer = self.call(request)
        try:
            return parse(answer)
        except ValueError as exc:
            raise ProviderUnavailable(f"{self.function_name}: unexpected answer to {request['action']}: {exc}") from exc


_CODE = re.compile(r"^[A-Za-z][A-Za-z0-9_.]{0,63}$")


def _code(value: Any) -> str:
    """An error code or class name as such (letters, digits, ``_`` and ``.``), else ``unlisted``."""
    return value if isinstance(value, str) and _CODE.match(value) else "unlisted"


def _validated(parse: Callable[[Any], T], answer: Any, what: str) -> T:
    """A lookup's answer parsed; one that breaks the contract is ProviderUnavailable (transient), as
    for the calls (never a bare ValueError, which would be classified unknown)."""
    try:
        return parse(answer)
    except ValueError as exc:
        raise ProviderUnavailable(f"{what}: answer does not match the contract ({exc})") from exc


class LambdaPaymentProvider:
    """:class:`~order_domain.ports.PaymentProvider` on a payment provider function."""

    def __init__(self, function_name: str, *, client: Any) -> None:
        self.client = ProviderClient(function_name, client=client)

    def charge(self, key: str, *, order_id: str, amount_cents: int, currency: str, payment_token: str) -> Charge:
        request = {
            "action": "charge",
            "idempotency_key": key,
            "order_id": order_id,
            "amount_cents": amount_cents,
            "currency": currency,
            "payment_token": payment_token,
        }
        return self.client.parsed(request, parse_charge)

    def find_charge(self, key: str) -> Charge | None:
        answer = self.client.call({"action": "get", "idempotency_key": key})
        return None if answer.get("status") == "not_found" else _validated(parse_charge, answer, "charge lookup")

    def find_refund(self, key: str) -> Refund | None:
        """The refund under ``key`` with its settlement (the sandbox's ``get`` of the refund's key)."""
        answer = self.client.call({"action": "get", "idempotency_key": key})
        return None if answer.get("status") == "not_found" else _validated(parse_refund, answer, "refund lookup")

    def refund(self, key: str, *, charge_key: str, order_id: str) -> Refund:
        request = {
            "action": "refund",
            "idempotency_key": key,
            "charge_idempotency_key": charge_key,
            "order_id": order_id,
        }
        return self.client.parsed(request, parse_refund)


class LambdaCarrier:
    """:class:`~order_domain.ports.Carrier` on a carrier function."""

    def __init__(self, function_name: str, *, client: Any) -> None:
        self.client = ProviderClient(function_name, client=client)

    def ship(self, key: str, *, order_id: str, address: dict[str, Any], items: list[dict[str, Any]]) -> Shipment:
        request = {"action": "ship", "idempotency_key": key, "order_id": order_id, "address": address, "items": items}
        return self.client.parsed(request, parse_shipment)

    def find_shipment(self, key: str) -> Shipment | None:
        answer = self.client.call({"action": "get", "idempotency_key": key})
        return None if answer.get("status") == "not_found" else _validated(parse_shipment, answer, "shipment lookup")

    def cancel_shipment(self, key: str, *, cancel_key: str) -> Shipment:
        request = {"action": "cancel", "idempotency_key": key, "cancel_idempotency_key": cancel_key}
        return self.client.parsed(request, parse_shipment)
