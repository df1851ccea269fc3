"""Calls to external providers (payment, carrier) deployed as Lambda functions."""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from shared.aws import client
from shared.correlation import current_correlation_id
from shared.exceptions import PayloadMismatch, ProviderUnavailable


class ProviderClient:
    """Synchronous JSON request/response to a provider function, correlation ID included."""

    def __init__(self, function_name: str) -> None:
        self.function_name = function_name

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        body = {**request, "correlation_id": current_correlation_id()}
        try:
            response = client("lambda").invoke(
                FunctionName=self.function_name, InvocationType="RequestResponse", Payload=json.dumps(body).encode()
            )
            payload = json.loads(response["Payload"].read() or b"{}")
        except (ClientError, BotoCoreError, json.JSONDecodeError) as exc:
            raise ProviderUnavailable(f"{self.function_name} call failed: {exc}") from exc
        if response.get("FunctionError"):
            raise ProviderUnavailable(
                f"{self.function_name} failed: {payload.get('errorType')}: {payload.get('errorMessage')}"
            )
        if payload.get("status") == "error":
            if payload.get("error") == "idempotency_key_reused":
                raise PayloadMismatch(f"provider rejected reuse of key {request.get('idempotency_key')}")
            raise ProviderUnavailable(f"provider error: {payload.get('error')}")
        return dict(payload)
