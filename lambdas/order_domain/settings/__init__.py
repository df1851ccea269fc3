"""Typed settings per function family, read once at the edge (module import) from the environment.

One small frozen class per family (Powertools' config-object style), each in its own module so a
function imports only its own: its required fields are not optional, and :func:`load` checks them
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

The classes hold fields only. What a field means is the same in every family that has it, so its
variable and its reader are written once, in :data:`READERS`, and :func:`load` fills any class
from them (``load(IntakeSettings)``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

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


def _required(name: str) -> Callable[[Env, Any], str]:
    return lambda env, _default: required(env, name)


def _optional(name: str) -> Callable[[Env, Any], str | None]:
    return lambda env, _default: optional(env, name)


def _integer(name: str) -> Callable[[Env, Any], int]:
    return lambda env, default: integer(env, name, default)


def _provider(which: str) -> Callable[[Env, Any], Any]:
    def read(env: Env, _default: Any) -> Any:
        from order_domain.settings import providers  # imported on use: only provider-calling families

        return providers.payment_from_env(env) if which == "payment" else providers.carrier_from_env(env)

    return read


def _replay_targets(env: Env, _default: Any) -> Any:
    from order_domain.settings.replay import replay_targets  # imported on use: the replay function's only

    return replay_targets(required(env, names.REPLAY_TARGETS))


#: Each settings field, by name: how it is read (its variable from :mod:`order_domain.env`; the
#: reader gets the class's default for the field, or None).
READERS: dict[str, Callable[[Env, Any], Any]] = {
    "idempotency_table": _required(names.IDEMPOTENCY_TABLE_NAME),
    "idempotency_ttl_seconds": lambda env, _default: idempotency_ttl(env),
    "orders_table": _required(names.ORDERS_TABLE_NAME),
    "inventory_table": _required(names.INVENTORY_TABLE_NAME),
    "ledger_table": _required(names.LEDGER_TABLE_NAME),  # the dev sandbox providers' (sandbox.settings)
    "state_machine_arn": _required(names.STATE_MACHINE_ARN),
    #: Required wherever it is a field: refuse to start rather than park an order nobody hears about.
    "needs_attention_queue_url": _required(names.NEEDS_ATTENTION_QUEUE_URL),
    "dead_letter_queue_url": _optional(names.DEAD_LETTER_QUEUE_URL),
    "failures_table": _optional(names.FAILURES_TABLE_NAME),
    "throttle_requeue_queue_url": _optional(names.THROTTLE_REQUEUE_QUEUE_URL),
    "payment": _provider("payment"),
    "carrier": _provider("carrier"),
    "stuck_after_seconds": _integer(names.STUCK_AFTER_SECONDS),
    "reconcile_window_seconds": _integer(names.RECONCILE_WINDOW_SECONDS),
    "reconcile_max_orders": _integer(names.RECONCILE_MAX_ORDERS),
    "replay_targets": _replay_targets,
    "webhook_secret_arn": _required(names.WEBHOOK_SECRET_ARN),
}

T = TypeVar("T")


def load(cls: type[T], env: Env | None = None) -> T:
    """``cls`` (a settings NamedTuple) read from ``env`` (default: the process environment), each
    field by its :data:`READERS` entry; :class:`ConfigurationError` names a missing variable."""
    env = environ(env)
    defaults: dict[str, Any] = getattr(cls, "_field_defaults", {})
    fields: tuple[str, ...] = getattr(cls, "_fields")  # noqa: B009 (a NamedTuple class attribute)
    values = {name: READERS[name](env, defaults.get(name)) for name in fields}
    return cast(T, cast(Any, cls)(**values))


if TYPE_CHECKING:

    class IdempotentSettings(Protocol):
        """What every idempotent function's settings have (read-only, as NamedTuple fields are)."""

        @property
        def idempotency_table(self) -> str: ...

        @property
        def idempotency_ttl_seconds(self) -> int: ...
