"""botocore's Signature Version 4 without its HMAC for the requests only moto reads (a speed patch).

moto never checks a request's signature; it reads the access key and the region from the
``Authorization`` header's credential scope. Computing the signature (a canonical request, a SHA-256
of the payload, four HMACs) took about 4% of a chaos shard's CPU for ~60,000 in-process calls. The
patched signer writes the same header (access key, date, region, service, signed headers) with a
signature of zeros. Requests whose signature is checked keep botocore's signer: ``execute-api`` (the
order API's ``AWS_IAM`` methods, verified by ``local_cloud.apigateway.auth``) and every subclass of
``SigV4Auth`` (S3's, query-string presigning).

Why hand-written: botocore has no option to skip signing while keeping the credential scope
(``UNSIGNED`` drops the header, and moto would then answer for another account and region).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

from botocore.auth import SIGV4_TIMESTAMP, SigV4Auth
from botocore.exceptions import NoCredentialsError
from botocore.utils import get_current_datetime

#: Services whose signatures the emulator verifies: always signed for real.
VERIFIED_SERVICES = frozenset({"execute-api"})
#: The signature moto is given (it never checks one).
ZERO_SIGNATURE = "0" * 64


@contextmanager
def sigv4_without_hmac() -> Iterator[None]:
    """While active, ``SigV4Auth.add_auth`` writes the credential scope with a zero signature, except for
    :data:`VERIFIED_SERVICES` and ``SigV4Auth``'s subclasses (botocore's signer, unchanged)."""
    original = SigV4Auth.add_auth

    def add_auth(self: SigV4Auth, request: Any) -> None:
        if type(self) is not SigV4Auth or self._service_name in VERIFIED_SERVICES:
            original(self, request)
            return
        if self.credentials is None:
            raise NoCredentialsError()
        request.context["timestamp"] = get_current_datetime().strftime(SIGV4_TIMESTAMP)
        self._modify_request_before_signing(request)  # X-Amz-Date, the session token, no stale header
        signed = self.signed_headers(self.headers_to_sign(request))
        request.headers["Authorization"] = (
            f"AWS4-HMAC-SHA256 Credential={self.scope(request)}, SignedHeaders={signed}, Signature={ZERO_SIGNATURE}"
        )

    with mock.patch.object(SigV4Auth, "add_auth", add_auth):
        yield
