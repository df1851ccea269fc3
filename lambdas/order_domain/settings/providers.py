"""Provider endpoints: a provider's HTTPS API (prod) or a provider function in the account (dev)."""

from __future__ import annotations

from typing import NamedTuple

from lambda_resilience.exceptions import ConfigurationError
from order_domain import env as names
from order_domain.settings import Env, optional


class HttpsProvider(NamedTuple):
    """A provider's HTTPS API (prod): base URL and the Secrets Manager secret holding its API key."""

    url: str
    secret_arn: str


class ProviderFunction(NamedTuple):
    """A provider deployed as a Lambda function in the account (dev: the sandbox)."""

    function_name: str


Provider = HttpsProvider | ProviderFunction


def provider_from_env(env: Env, prefix: str, function_variable: str) -> Provider:
    """``<prefix>_URL`` (+ ``<prefix>_SECRET_ARN``) when set (prod always), else the provider function."""
    url_variable, secret_variable = f"{prefix}_URL", f"{prefix}_SECRET_ARN"
    url = optional(env, url_variable)
    if url is not None:
        secret = optional(env, secret_variable)
        if secret is None:
            raise ConfigurationError(f"{secret_variable}: a provider secret ARN is required with a provider URL")
        return HttpsProvider(url, secret)
    function_name = optional(env, function_variable)
    if function_name is not None:
        return ProviderFunction(function_name)
    raise ConfigurationError(f"set {url_variable} (+ {secret_variable}) or {function_variable}")


def payment_from_env(env: Env) -> Provider:
    """The payment provider."""
    return provider_from_env(env, names.PAYMENT_API_PREFIX, names.PAYMENT_PROVIDER_FUNCTION)


def carrier_from_env(env: Env) -> Provider:
    """The carrier."""
    return provider_from_env(env, names.CARRIER_API_PREFIX, names.CARRIER_FUNCTION)
