"""The order API (``POST /orders``, ``GET /orders/{id}``) as an operator tool calls it: SigV4-signed.

The methods use ``AWS_IAM`` authorization, so every request is signed for ``execute-api`` with
botocore's own signer and the credentials of the target's session (a profile, the environment,
a role): the caller needs ``execute-api:Invoke`` on the API. Used by ``ops smoke`` against any
deployment: a real account, MiniStack (``make rehearse``) or ``ops local up``.
"""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

from ops.target import Target, TargetError

SERVICE = "execute-api"
API_OUTPUT = "OrderApiUrl"
TIMEOUT_SECONDS = 60.0
LOOPBACK = ("127.0.0.1", "localhost")
#: ``https://{api-id}.execute-api.{region}.amazonaws.com/{stage}/``: the invoke URL CloudFormation gives.
_AWS_INVOKE_URL = re.compile(
    r"^https://(?P<api>[a-z0-9]+)\.execute-api\.[a-z0-9-]+\.amazonaws\.com/(?P<stage>[^/]+)/?$"
)


@dataclass(frozen=True)
class ApiAnswer:
    status: int
    headers: dict[str, str]
    body: str

    def header(self, name: str) -> str | None:
        """A response header, by case-insensitive name."""
        return next((v for k, v in self.headers.items() if k.lower() == name.lower()), None)


def signed_request(
    method: str, url: str, body: bytes, headers: dict[str, str] | None, credentials: Any, region: str
) -> ApiAnswer:
    """One request signed for ``execute-api`` with ``credentials`` (botocore credentials); a loopback
    URL (a local engine) is never sent through a proxy."""
    signed = AWSRequest(
        method=method, url=url, data=body, headers={"Content-Type": "application/json", **(headers or {})}
    )
    SigV4Auth(credentials, SERVICE, region).add_auth(signed)
    request = urllib.request.Request(url, data=body or None, headers=dict(signed.headers.items()), method=method)
    handlers = [urllib.request.ProxyHandler({})] if urlparse(url).hostname in LOOPBACK else []
    try:
        with urllib.request.build_opener(*handlers).open(request, timeout=TIMEOUT_SECONDS) as response:
            return ApiAnswer(response.status, dict(response.headers.items()), response.read().decode())
    except urllib.error.HTTPError as exc:
        return ApiAnswer(exc.code, dict(exc.headers.items()), exc.read().decode())


def api_base_url(target: Target) -> str | None:
    """The stage's base URL (no trailing slash), or None when the stack has no order API.

    With ``--endpoint-url`` (a local AWS), an AWS invoke URL is rewritten to the path form local
    engines serve, ``{endpoint}/_aws/execute-api/{api-id}/{stage}`` (MiniStack's and LocalStack's);
    ``ops local up`` publishes its own loopback URL in the output, used as it is.
    """
    url = target.outputs.get(API_OUTPUT)
    if not url:
        return None
    match = _AWS_INVOKE_URL.match(url)
    if match and target.endpoint_url:
        return f"{target.endpoint_url.rstrip('/')}/_aws/execute-api/{match['api']}/{match['stage']}"
    return url.rstrip("/")


class OrderApiClient:
    """Signed requests to one stage of the order API."""

    def __init__(self, target: Target, base_url: str) -> None:
        session = target.session()
        credentials = session.get_credentials()
        if credentials is None:
            raise TargetError("no AWS credentials to sign the order API's requests (execute-api, SigV4)")
        self.base_url = base_url
        self.credentials = credentials
        self.region = session.region_name or target.client("sqs").meta.region_name

    def request(self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None) -> ApiAnswer:
        return signed_request(
            method, f"{self.base_url}{path}", body, headers, self.credentials.get_frozen_credentials(), self.region
        )

    def post_order(self, body: bytes, idempotency_key: str, correlation_id: str) -> ApiAnswer:
        return self.request(
            "POST", "/orders", body, {"Idempotency-Key": idempotency_key, "X-Correlation-Id": correlation_id}
        )

    def get_order(self, order_id: str) -> ApiAnswer:
        return self.request("GET", f"/orders/{order_id}")
