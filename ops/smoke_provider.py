"""The smoke's way to the provider: the charge function's environment and the pipeline's own payment port,
its AWS clients pointed at the deployment under test."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import order_domain.env as env_names
from ops.target import Target, TargetError
from order_domain.settings import load


def _layer() -> Any:
    import lambda_resilience.aws as aws

    return aws


def charge_function_environment(target: Target) -> dict[str, str]:
    """The environment of this stack's charge function (the one whose orders table is the stack's)."""
    orders_table = target.output("OrdersTableName")
    for page in target.client("lambda").get_paginator("list_functions").paginate():
        for function in page["Functions"]:
            env = (function.get("Environment") or {}).get("Variables") or {}
            if env.get(env_names.ORDERS_TABLE_NAME) != orders_table:
                continue
            if env.get(env_names.PAYMENT_API_URL) or env.get(env_names.PAYMENT_PROVIDER_FUNCTION):
                return dict(env)
    raise TargetError(f"no function of this stack has the payment provider's settings (orders table {orders_table})")


def payment_port(target: Target, env: dict[str, str]) -> Any:
    """The pipeline's own PaymentProvider adapter (its AWS calls go through :func:`layer_clients`)."""
    _layer()
    from order_domain.settings.payment import PaymentStepSettings
    from order_domain.wiring import payment_provider

    return payment_provider(load(PaymentStepSettings, env))


@contextmanager
def layer_clients(target: Target) -> Iterator[None]:
    """Within: the layer's shared clients for Lambda and Secrets Manager are ``target``'s.

    The layer's client factory (lambda_resilience.aws.client) takes no endpoint or profile; the
    adapter must reach the same deployment as every other call here. The previous clients are put
    back on exit (``ops local up`` runs handlers in-process, which share that cache).
    """
    aws = _layer()
    services = ("lambda", "secretsmanager")
    with aws._lock:
        saved = {service: aws._clients.get(service) for service in services}
        for service in services:
            aws._clients[service] = target.client(service)
    try:
        yield
    finally:
        with aws._lock:
            for service, previous in saved.items():
                if previous is None:
                    aws._clients.pop(service, None)
                else:
                    aws._clients[service] = previous
