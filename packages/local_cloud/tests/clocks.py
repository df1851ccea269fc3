"""Clocks for the emulator's tests."""

from __future__ import annotations

from local_cloud.clock import SimClock


class StepClock(SimClock):
    """A clock that only moves when the test says so."""

    def __init__(self) -> None:
        super().__init__()
        self.t = 1_000_000.0

    def now(self) -> float:
        return self.t
