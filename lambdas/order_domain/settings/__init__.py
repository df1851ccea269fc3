"""Typed settings per function family, read once at the edge (module import) from the environment.

One small frozen class per family (Powertools' config-object style), each in its own module so a
function imports only its own: its required fields are not optional, and ``from_env`` checks them
once, raising :class:`ConfigurationError` naming the missing variable, so a function with missing
configuration fails at its cold start, not at its first order. Variable names come only from
:mod:`order_domain.env` (the stack sets the same constants). NamedTuples, not dataclasses: immutable
all the same, and about 1.5 ms cheaper at every cold start (each NamedTuple class still costs a
fraction of a millisecond to create, hence one module per family).

- :mod:`.intake` ``IntakeSettings``; :mod:`.step` ``StepSettings`` (any saga step);
  :mod:`.inventory` ``InventoryStepSettings``; :mod:`.payment` ``PaymentStepSettings``;
  :mod:`.shipping` ``ShippingStepSettings``; :mod:`.finalize` ``FinalizeSettings``;
  :mod:`.sweeper` ``SweeperSettings``; :mod:`.replay` ``DlqReplaySettings``; :mod:`.providers` the
  provider endpoints (HTTPS API or Lambda function). The dev sandbox's are ``sandbox.settings``
  (prod deploys no sandbox code).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from lambda_resilience.exceptions import ConfigurationError
from order_domain import env as names

#: Idempotency record TTL. Must outlive every redelivery of the same business operation:
#: SQS retention (4 days on the orders queue) and the DLQ replay window (14 days DLQ retention).
#: A replay after the record expired would re-run the operation, so the TTL covers the DLQ
#: retention plus one day of slack.
DEFAULT_IDEMPOTENCY_TTL_SECONDS = 15 * 24 * 3600
#: Below this, a redelivery (SQS visibility timeout, Step Functions retry) could outlive the record.
MIN_IDEMPOTENCY_TTL_SECONDS = 3600

Env = Mapping[str, str]


def environ(env: Env | None) -> Env:
    """``env``, or the process environment (the settings edge: the only reader of ``os.environ``)."""
    return os.environ if env is None else env


def required(env: Env, name: str) -> str:
    """The non-blank value of ``name``; :class:`ConfigurationError` naming it otherwise."""
    value = env.get(name, "").strip()
    if not value:
        raise ConfigurationError(f"environment variable {name} is required but not set")
    return value


def optional(env: Env, name: str) -> str | None:
    """The value of ``name``, None when unset or blank."""
    return env.get(name, "").strip() or None


def integer(env: Env, name: str, default: int) -> int:
    """``name`` as an integer (``default`` when unset)."""
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        return int(text)
    except ValueError as exc:
        raise ConfigurationError(f"{name} must be an integer, got {text!r}") from exc


def idempotency_ttl(env: Env) -> int:
    """``IDEMPOTENCY_TTL_SECONDS`` (default 15 days), refused below one hour."""
    text = env.get(names.IDEMPOTENCY_TTL_SECONDS, str(DEFAULT_IDEMPOTENCY_TTL_SECONDS))
    try:
        seconds = int(text)
    except ValueError as exc:
        raise ConfigurationError(f"{names.IDEMPOTENCY_TTL_SECONDS} must be an integer, got {text!r}") from exc
    if seconds < MIN_IDEMPOTENCY_TTL_SECONDS:
        raise ConfigurationError(
            f"{names.IDEMPOTENCY_TTL_SECONDS} below one hour would let redeliveries re-run effects"
        )
    return seconds


def idempotent_order_fields(env: Env) -> dict[str, Any]:
    """The fields every idempotent order function's settings share: its idempotency table and record
    TTL, and the orders table (``cls(**idempotent_order_fields(env), ...)``)."""
    return {
        "idempotency_table": required(env, names.IDEMPOTENCY_TABLE_NAME),
        "orders_table": required(env, names.ORDERS_TABLE_NAME),
        "idempotency_ttl_seconds": idempotency_ttl(env),
    }


if TYPE_CHECKING:

    class IdempotentSettings(Protocol):
        """What every idempotent function's settings have (read-only, as NamedTuple fields are)."""

        @property
        def idempotency_table(self) -> str: ...

        @property
        def idempotency_ttl_seconds(self) -> int: ...
