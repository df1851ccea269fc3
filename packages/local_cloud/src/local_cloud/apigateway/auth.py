"""``AWS_IAM`` method authorization: the request's Signature Version 4 for ``execute-api``, checked.

The signature is recomputed with botocore's own signer (``botocore.auth.SigV4Auth``: canonical
request, string to sign, signing key) over the headers the caller says it signed, with the
secret of the access key it names, taken from the credentials the emulator knows (the local
ones every process of a local run uses). What AWS answers, per
https://docs.aws.amazon.com/apigateway/latest/developerguide/supported-gateway-response-types.html
and its error messages: no ``Authorization`` header -> ``MISSING_AUTHENTICATION_TOKEN`` (403
"Missing Authentication Token"); a wrong signature -> ``INVALID_SIGNATURE`` (403); an unknown
access key -> 403 "The security token included in the request is invalid."; a date more than 5
minutes away -> 403 "Signature expired" (SigV4's 5-minute window:
https://docs.aws.amazon.com/IAM/latest/UserGuide/signing-elements.html). IAM policies of the
caller are not evaluated (the local credentials stand for an administrator).
"""

from __future__ import annotations

import datetime
import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

SERVICE = "execute-api"
MAX_SKEW = datetime.timedelta(minutes=5)
_AUTH = re.compile(
    r"AWS4-HMAC-SHA256\s+Credential=(?P<key>[^/,\s]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)/aws4_request,"
    r"\s*SignedHeaders=(?P<signed>[^,\s]+),\s*Signature=(?P<signature>[0-9a-f]+)"
)

INVALID_SIGNATURE_MESSAGE = (
    "The request signature we calculated does not match the signature you provided. "
    "Check your AWS Secret Access Key and signing method. Consult the service documentation for details."
)


@dataclass(frozen=True)
class AuthFailure:
    """Why a request is refused: the gateway response type and its message."""

    response_type: str
    message: str
    status: int = 403


@dataclass(frozen=True)
class Caller:
    access_key: str
    region: str


def verify_sigv4(
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes,
    secrets: Mapping[str, str],
    now: datetime.datetime | None = None,
) -> Caller | AuthFailure:
    """Check the request's SigV4 ``Authorization`` header; the caller, or why it is refused.

    ``url`` is the URL as the client addressed it (scheme, the Host header, path and query);
    ``secrets`` maps access key IDs to secret keys.
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    header = lowered.get("authorization")
    if not header:
        return AuthFailure("MISSING_AUTHENTICATION_TOKEN", "Missing Authentication Token")
    match = _AUTH.match(header.strip())
    if match is None:
        return AuthFailure(
            "INCOMPLETE_SIGNATURE",
            f"Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' parameters. "
            f"Authorization={header}",
        )
    key = match["key"]
    if key not in secrets:
        return AuthFailure("UNRECOGNIZED_CLIENT", "The security token included in the request is invalid.")
    stamp = lowered.get("x-amz-date", "")
    try:
        signed_at = datetime.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.UTC)
    except ValueError:
        return AuthFailure(
            "INCOMPLETE_SIGNATURE",
            "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.",
        )
    current = now or datetime.datetime.now(datetime.UTC)
    if abs(current - signed_at) > MAX_SKEW:
        return AuthFailure(
            "INVALID_SIGNATURE",
            f"Signature expired: {stamp} is now earlier than "
            f"{(current - MAX_SKEW).strftime('%Y%m%dT%H%M%SZ')} ({current.strftime('%Y%m%dT%H%M%SZ')} - 5 min.)",
        )
    if match["service"] != SERVICE or not stamp.startswith(match["date"]):
        return AuthFailure("INVALID_SIGNATURE", INVALID_SIGNATURE_MESSAGE)
    signed = match["signed"].split(";")
    request = AWSRequest(method=method, url=url, data=body, headers={h: lowered.get(h, "") for h in signed})
    request.context["timestamp"] = stamp
    signer = SigV4Auth(Credentials(key, secrets[key]), SERVICE, match["region"])
    canonical = signer.canonical_request(request)
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    if not hmac.compare_digest(expected, match["signature"]):
        return AuthFailure("INVALID_SIGNATURE", INVALID_SIGNATURE_MESSAGE)
    return Caller(key, match["region"])


def sign(
    method: str, url: str, headers: Mapping[str, str], body: bytes, key: str, secret: str, region: str
) -> dict[str, str]:
    """The headers of a request signed for ``execute-api`` (botocore's signer), for local clients."""
    request = AWSRequest(method=method, url=url, data=body, headers=dict(headers))
    SigV4Auth(Credentials(key, secret), SERVICE, region).add_auth(request)
    return dict(request.headers.items())
