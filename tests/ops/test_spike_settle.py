"""The spike's stepped clock never runs ahead of its executions, however loaded the machine."""

from __future__ import annotations

from types import SimpleNamespace
from unittest import mock

from harness.spike import spike


def test_spike_settle_waits_for_executions_slowed_by_load() -> None:
    """Executions that take 5 s of wall time to reach their next wait (a loaded CI machine) are
    waited for: the clock steps only once none can run (a timeout would let simulated time run
    ahead of them and stretch every latency the spike measures)."""
    wall = iter(range(1_000))
    runnable = iter([3, 3, 2, 2, 1, 0])
    driver = SimpleNamespace(
        run=SimpleNamespace(limits=SimpleNamespace(runnable_executions=lambda: next(runnable))), settle_timeouts=0
    )
    with mock.patch.object(spike.time, "monotonic", lambda: float(next(wall))), mock.patch.object(spike.time, "sleep"):
        spike.SpikeDriver.settle(driver)  # type: ignore[arg-type]
    assert driver.settle_timeouts == 0
    assert next(runnable, None) is None  # it waited until none could run
