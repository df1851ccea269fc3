"""The wall clock, behind one function so a local simulation can substitute its own."""

from __future__ import annotations

import time


def now() -> float:
    """Seconds since the epoch."""
    return time.time()


def iso(seconds: float | None = None) -> str:
    """``YYYY-MM-DDTHH:MM:SSZ`` for ``seconds`` (default: now)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now() if seconds is None else seconds))
