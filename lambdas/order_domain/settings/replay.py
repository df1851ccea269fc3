"""The DLQ replay function's settings."""

from __future__ import annotations

import json
from typing import NamedTuple

from lambda_resilience.exceptions import ConfigurationError
from order_domain import env as names


def replay_targets(text: str) -> tuple[tuple[str, str], ...]:
    """``REPLAY_TARGETS``: a JSON list of ``{"dlq_url", "source_url"}``."""
    try:
        targets = json.loads(text)
        return tuple((str(t["dlq_url"]), str(t["source_url"])) for t in targets)
    except (ValueError, TypeError, KeyError) as exc:
        raise ConfigurationError(f"{names.REPLAY_TARGETS} must be a JSON list of {{dlq_url, source_url}}") from exc


class DlqReplaySettings(NamedTuple):
    """The DLQ replay function: which DLQ goes back to which source queue."""

    replay_targets: tuple[tuple[str, str], ...]
    #: Where redriven messages' categories are looked up (None: unclassified, not replayed).
    failures_table: str | None = None
