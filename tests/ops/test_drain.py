"""harness.stack.pipeline.PipelineRun.drain: --timeout bounds a pipeline that stopped moving, not a slow one.

A 2,000-order business run timed out at the 300 s default on a loaded machine while it was still delivering
and invoking: wall time says how busy the machine is, not whether the pipeline is stuck.
"""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest

from harness.stack.pipeline import PipelineRun
from local_cloud import driver
from local_cloud.clock import SimClock
from local_cloud.schedules import Schedules


class _Cloud:
    """Delivers one message per turn for ``busy_for`` wall seconds (each invoking a function), then nothing."""

    def __init__(self, busy_for: float, function: Any) -> None:
        self.until = time.monotonic() + busy_for
        self.function = function

    def deliver(self) -> int:
        if time.monotonic() < self.until:
            time.sleep(0.01)
            self.function.history.append((0.0, False))
            return 1
        return 0

    def next_visible_at(self) -> None:
        return None

    def queued(self) -> bool:
        return False

    def evaluate_alarms(self) -> list[str]:
        return []


def _run(busy_for: float, timeout: float, *, stuck: bool = False) -> PipelineRun:
    run = PipelineRun.__new__(PipelineRun)
    function = SimpleNamespace(history=[])
    run.options = SimpleNamespace(timeout_seconds=timeout)  # type: ignore[assignment]
    run.clock = SimClock()
    run.cloud = _Cloud(busy_for, function)  # type: ignore[assignment]
    run.deployment = SimpleNamespace(functions={"f": function})  # type: ignore[assignment]
    run.running_executions = lambda: stuck  # type: ignore[method-assign]
    run.schedules = Schedules([], run.clock.now())  # no scheduled rule fires in this pipeline
    return run


def test_drain_slow_but_moving_pipeline_is_not_timed_out() -> None:
    """Delivering for 1.5 s with a 0.5 s timeout: it settles (the timeout counts from the last progress)."""
    _run(busy_for=1.5, timeout=0.5).drain()


def test_drain_stuck_pipeline_times_out_after_the_timeout_without_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    """An execution that never ends and nothing delivered or invoked: TimeoutError, naming the stall."""
    monkeypatch.setattr(driver, "EXECUTION_POLL_SECONDS", 0.01)
    started = time.monotonic()
    with pytest.raises(TimeoutError, match=r"no progress .* for 0.5 s"):
        _run(busy_for=0.2, timeout=0.5, stuck=True).drain()
    assert 0.6 <= time.monotonic() - started < 5
