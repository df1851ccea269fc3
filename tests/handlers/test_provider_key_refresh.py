"""The provider API key: cached with a TTL, refreshed once when the provider answers 401 (issue 41, point 7).

A rotated key (Secrets Manager's AWSCURRENT moved) reaches a warm execution environment within the TTL, or at
once when the provider already refuses the old key: the 401 refetches the secret and the request is sent again
with the new key, once. The TTL is the AWS Parameters and Secrets Lambda Extension's default, 300 s
(https://docs.aws.amazon.com/lambda/latest/dg/with-secrets-manager.html). Secrets Manager answers through
botocore's Stubber; the provider through a stand-in connection pool (urllib3's ``request`` signature).
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from order_domain.errors import ProviderRejected
from order_domain.https_providers import KEY_TTL_SECONDS, HttpsJsonClient, SecretApiKey

ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:payments/api-AbCdEf"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Answer:
    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status = status
        self._data = json.dumps(body).encode()

    def read(self, _amount: int) -> bytes:
        return self._data

    def release_conn(self) -> None:
        pass


class Provider:
    """Accepts only ``Bearer <valid>``; records the keys it was sent."""

    def __init__(self, valid: str) -> None:
        self.valid = valid
        self.keys: list[str] = []

    def request(self, method: str, url: str, **kwargs: Any) -> Answer:
        key = kwargs["headers"]["Authorization"].removeprefix("Bearer ")
        self.keys.append(key)
        if key != self.valid:
            return Answer(401, {"error": "unauthorized"})
        return Answer(200, {"ok": True})


def _stubbed(*keys: str) -> tuple[Any, Stubber]:
    client = boto3.client("secretsmanager", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    stubber = Stubber(client)
    for key in keys:
        stubber.add_response(
            "get_secret_value", {"ARN": ARN, "SecretString": json.dumps({"api_key": key})}, {"SecretId": ARN}
        )
    return client, stubber


def test_secret_api_key_refetches_after_its_ttl() -> None:
    client, stubber = _stubbed("key-1", "key-2")
    clock = Clock()
    key = SecretApiKey(ARN, client=client, clock=clock)
    with stubber:
        assert key() == "key-1"
        clock.now += KEY_TTL_SECONDS - 1
        assert key() == "key-1"  # cached: no second GetSecretValue
        clock.now += 2
        assert key() == "key-2"  # expired: read again
        stubber.assert_no_pending_responses()
    assert KEY_TTL_SECONDS == 300


def test_https_client_401_then_refreshed_key_succeeds() -> None:
    client, stubber = _stubbed("old-key", "new-key")
    provider = Provider(valid="new-key")
    http = HttpsJsonClient("https://api.payments.example.com/v1", SecretApiKey(ARN, client=client, clock=Clock()))
    http.pool = provider  # type: ignore[assignment]
    with stubber:
        assert http.request("GET", "/charges/k") == {"ok": True}
        stubber.assert_no_pending_responses()
    assert provider.keys == ["old-key", "new-key"]


def test_https_client_401_twice_is_rejected_after_one_refresh() -> None:
    client, stubber = _stubbed("old-key", "still-old")
    provider = Provider(valid="new-key")
    http = HttpsJsonClient("https://api.payments.example.com/v1", SecretApiKey(ARN, client=client, clock=Clock()))
    http.pool = provider  # type: ignore[assignment]
    with stubber, pytest.raises(ProviderRejected, match="401"):
        http.request("GET", "/charges/k")
    assert provider.keys == ["old-key", "still-old"]  # one refresh, one resend: no loop
