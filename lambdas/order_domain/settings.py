"""Settings read once, at the edge (module import), from the function's environment.

A NamedTuple, not a dataclass: immutable all the same, and about 1.5 ms cheaper at every cold start.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import NamedTuple

from lambda_resilience.exceptions import ConfigurationError

#: Idempotency record TTL. Must outlive every redelivery of the same business operation:
#: SQS retention (4 days on the orders queue) and the DLQ replay window (14 days DLQ retention).
#: A replay after the record expired would re-run the operation, so the TTL covers the DLQ
#: retention plus one day of slack.
DEFAULT_IDEMPOTENCY_TTL_SECONDS = 15 * 24 * 3600


def _require(env: Mapping[str, str], name: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise ConfigurationError(f"environment variable {name} is required but not set")
    return value


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        return int(text)
    except ValueError as exc:
        raise ConfigurationError(f"{name} must be an integer, got {text!r}") from exc


def _replay_targets(text: str) -> tuple[tuple[str, str], ...]:
    """``REPLAY_TARGETS``: a JSON list of ``{"dlq_url", "source_url"}``."""
    if not text.strip():
        return ()
    try:
        targets = json.loads(text)
        return tuple((str(t["dlq_url"]), str(t["source_url"])) for t in targets)
    except (ValueError, TypeError, KeyError) as exc:
        raise ConfigurationError("REPLAY_TARGETS must be a JSON list of {dlq_url, source_url}") from exc


class Settings(NamedTuple):
    """Resource names and tunables. Unset optional resources are ``None``.

    Use :meth:`from_env` once per module; pass the result down instead of reading ``os.environ``.
    """

    idempotency_table: str | None = None
    orders_table: str | None = None
    inventory_table: str | None = None
    ledger_table: str | None = None
    state_machine_arn: str | None = None
    payment_provider_function: str | None = None
    carrier_function: str | None = None
    payment_api_url: str | None = None
    payment_api_secret_arn: str | None = None
    carrier_api_url: str | None = None
    carrier_api_secret_arn: str | None = None
    needs_attention_queue_url: str | None = None
    dead_letter_queue_url: str | None = None
    replay_targets: tuple[tuple[str, str], ...] = ()
    failures_table: str | None = None
    stuck_after_seconds: int = 1800
    #: The sweeper reconciles orders that became COMPLETED or COMPENSATED this recently (three
    #: 5-minute sweeps: a failed sweep or two still leaves each order checked once).
    reconcile_window_seconds: int = 900
    #: ... at most this many per sweep (two provider lookups each), the oldest first.
    reconcile_max_orders: int = 200
    idempotency_ttl_seconds: int = DEFAULT_IDEMPOTENCY_TTL_SECONDS

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, required: tuple[str, ...] = ()) -> Settings:
        """Build settings from environment variables; ``required`` names must be present."""
        env = os.environ if env is None else env
        for name in required:
            _require(env, name)
        ttl = env.get("IDEMPOTENCY_TTL_SECONDS", str(DEFAULT_IDEMPOTENCY_TTL_SECONDS))
        try:
            ttl_seconds = int(ttl)
        except ValueError as exc:
            raise ConfigurationError(f"IDEMPOTENCY_TTL_SECONDS must be an integer, got {ttl!r}") from exc
        if ttl_seconds < 3600:
            raise ConfigurationError("IDEMPOTENCY_TTL_SECONDS below one hour would let redeliveries re-run effects")
        return cls(
            idempotency_table=env.get("IDEMPOTENCY_TABLE_NAME") or None,
            orders_table=env.get("ORDERS_TABLE_NAME") or None,
            inventory_table=env.get("INVENTORY_TABLE_NAME") or None,
            ledger_table=env.get("LEDGER_TABLE_NAME") or None,
            state_machine_arn=env.get("STATE_MACHINE_ARN") or None,
            payment_provider_function=env.get("PAYMENT_PROVIDER_FUNCTION") or None,
            carrier_function=env.get("CARRIER_FUNCTION") or None,
            payment_api_url=env.get("PAYMENT_API_URL") or None,
            payment_api_secret_arn=env.get("PAYMENT_API_SECRET_ARN") or None,
            carrier_api_url=env.get("CARRIER_API_URL") or None,
            carrier_api_secret_arn=env.get("CARRIER_API_SECRET_ARN") or None,
            needs_attention_queue_url=env.get("NEEDS_ATTENTION_QUEUE_URL") or None,
            dead_letter_queue_url=env.get("DEAD_LETTER_QUEUE_URL") or None,
            failures_table=env.get("FAILURES_TABLE_NAME") or None,
            replay_targets=_replay_targets(env.get("REPLAY_TARGETS", "")),
            stuck_after_seconds=_int(env, "STUCK_AFTER_SECONDS", 1800),
            reconcile_window_seconds=_int(env, "RECONCILE_WINDOW_SECONDS", 900),
            reconcile_max_orders=_int(env, "RECONCILE_MAX_ORDERS", 200),
            idempotency_ttl_seconds=ttl_seconds,
        )
