"""Wiring of a real provider's HTTPS API into the functions that call it (no resources of its own)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from constructs_lib.stage import ProviderEndpoint

_ENV_PREFIX = re.compile(r"[A-Z][A-Z0-9_]*")


@dataclass(frozen=True)
class HttpsProviderProps:
    """Props for :class:`HttpsProvider`.

    Attributes:
        endpoint: base URL and API-key secret ARN (from the stage's context keys).
        env_prefix: environment variable prefix the runtime adapter reads: ``PAYMENT_API`` gives
            ``PAYMENT_API_URL`` and ``PAYMENT_API_SECRET_ARN``.
    """

    endpoint: ProviderEndpoint
    env_prefix: str

    def __post_init__(self) -> None:
        if not _ENV_PREFIX.fullmatch(self.env_prefix):
            raise ValueError(f"env_prefix must be an upper-case identifier, got {self.env_prefix!r}")


class HttpsProvider(Construct):
    """A provider reached over HTTPS with an API key kept in AWS Secrets Manager.

    :meth:`grant_to` gives a function what the HTTPS adapter (``lambdas/order_domain``) needs:
    ``<PREFIX>_URL`` and ``<PREFIX>_SECRET_ARN`` in its environment, and
    ``secretsmanager:GetSecretValue`` on exactly that secret (its complete ARN, or the partial ARN
    with ``-??????``; see :attr:`constructs_lib.stage.ProviderEndpoint.secret_resource`). Nothing
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
        self.url_variable = f"{props.env_prefix}_URL"
        self.secret_variable = f"{props.env_prefix}_SECRET_ARN"

    def grant_to(self, function: lambda_.Function) -> None:
        """Point ``function`` at this provider and let it read the API-key secret."""
        function.add_environment(self.url_variable, self.endpoint.url)
        function.add_environment(self.secret_variable, self.endpoint.secret_arn)
        function.add_to_role_policy(
            iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=[self.endpoint.secret_resource])
        )
