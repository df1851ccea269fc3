"""Wiring of a real provider's HTTPS API into the functions that call it (no resources of its own)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

_ENV_PREFIX = re.compile(r"[A-Z][A-Z0-9_]*")
#: The random suffix of a complete secret ARN (``-`` and six characters).
SECRET_SUFFIX = re.compile(r"-[A-Za-z0-9]{6}$")


@dataclass(frozen=True)
class ProviderEndpoint:
    """A real provider's HTTPS API: base URL and the Secrets Manager secret holding its API key.

    Attributes:
        url: base URL (``https://``).
        secret_arn: the secret's ARN, complete (``...:secret:name-AbCdEf``) or partial (``...:secret:name``).
    """

    url: str
    secret_arn: str

    @property
    def secret_resource(self) -> str:
        """The IAM resource naming exactly this secret.

        A complete ARN names itself. A partial ARN (no ``-XXXXXX`` suffix) matches the secret
        only with the suffix, so IAM gets ``<arn>-??????`` (six characters, as AWS documents):
        never ``<arn>*``, which would also match ``<name>-other``.
        """
        if SECRET_SUFFIX.search(self.secret_arn):
            return self.secret_arn
        return f"{self.secret_arn}-??????"


@dataclass(frozen=True)
class HttpsProviderProps:
    """Props for :class:`HttpsProvider`.

    Attributes:
        endpoint: base URL and API-key secret ARN (from the stage's context keys).
        env_prefix: environment variable prefix the runtime adapter reads: ``GEO_API`` gives
            ``GEO_API_URL`` and ``GEO_API_SECRET_ARN`` (:meth:`HttpsProvider.variables`).
    """

    endpoint: ProviderEndpoint
    env_prefix: str

    def __post_init__(self) -> None:
        if not _ENV_PREFIX.fullmatch(self.env_prefix):
            raise ValueError(f"env_prefix must be an upper-case identifier, got {self.env_prefix!r}")


class HttpsProvider(Construct):
    """A provider reached over HTTPS with an API key kept in AWS Secrets Manager.

    :meth:`grant_to` gives a function what an HTTPS adapter needs:
    ``<PREFIX>_URL`` and ``<PREFIX>_SECRET_ARN`` in its environment, and
    ``secretsmanager:GetSecretValue`` on exactly that secret (its complete ARN, or the partial ARN
    with ``-??????``; see :attr:`ProviderEndpoint.secret_resource`). Nothing
    else: a function this provider is not granted to cannot read the secret. A secret encrypted
    with a customer-managed KMS key also needs ``kms:Decrypt`` for the function in that key's policy
    (the key is not ours, so it is granted where the key is managed).

    Attributes:
        endpoint: the provider's endpoint.
        url_variable, secret_variable: the environment variable names.
    """

    def __init__(self, scope: Construct, construct_id: str, *, props: HttpsProviderProps) -> None:
        super().__init__(scope, construct_id)
        self.endpoint = props.endpoint
        self.url_variable, self.secret_variable = self.variables(props.env_prefix)

    @staticmethod
    def variables(env_prefix: str) -> tuple[str, str]:
        """The two environment variable names of ``env_prefix``: ``<prefix>_URL``, ``<prefix>_SECRET_ARN``."""
        return f"{env_prefix}_URL", f"{env_prefix}_SECRET_ARN"

    def grant_to(self, function: lambda_.Function) -> None:
        """Point ``function`` at this provider and let it read the API-key secret."""
        function.add_environment(self.url_variable, self.endpoint.url)
        function.add_environment(self.secret_variable, self.endpoint.secret_arn)
        function.add_to_role_policy(
            iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=[self.endpoint.secret_resource])
        )
