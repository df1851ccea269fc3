"""Per-execution waits on the simulated clock (docs/decisions/0026): a thread acting for a Step Functions
execution lets simulated time pass for itself only, and the runner steps the clock when every running
execution waits."""

from __future__ import annotations

import threading
import time

import pytest

from local_cloud.clock import SimClock, acting_execution, acting_for


def _waiting(clock: SimClock, name: str, seconds: float, ended: dict[str, float]) -> threading.Thread:
    """A thread acting for execution ``name`` that lets ``seconds`` of simulated time pass (a Retry wait)."""

    def run() -> None:
        with acting_for(name):
            clock.sleep(seconds)
        ended[name] = clock.now()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _until(predicate: object, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.001)
    assert predicate(), "timed out"  # type: ignore[operator]


def _step_once(clock: SimClock, running: list[str]) -> float:
    """The runner's step: the earliest end among the waits, once every running execution waits."""
    _until(lambda: clock.earliest_wait(running) is not None)
    target = clock.earliest_wait(running)
    assert target is not None
    clock.advance(max(0.0, target - clock.now()))
    return target


def test_clock_waits_two_executions_waiting_30_s_at_once_move_the_clock_30_s_not_60() -> None:
    """Two executions each wait 30 simulated seconds at the same time: on AWS both waits pass together. The
    shared clock moved by the sum (each wait advanced everyone's clock: 60 s)."""
    clock = SimClock()
    start = clock.now()
    ended: dict[str, float] = {}
    threads = [_waiting(clock, name, 30.0, ended) for name in ("a", "b")]
    _step_once(clock, ["a", "b"])
    for t in threads:
        t.join(5.0)
    assert set(ended) == {"a", "b"}
    moved = max(ended.values()) - start
    assert 30.0 <= moved < 32.0, moved
    assert clock.simulated_seconds < 31.0


def test_clock_waits_a_runner_step_releases_the_earliest_waiter_first() -> None:
    clock = SimClock()
    start = clock.now()
    ended: dict[str, float] = {}
    short, long = _waiting(clock, "short", 10.0, ended), _waiting(clock, "long", 30.0, ended)
    first = _step_once(clock, ["short", "long"])
    assert first - start == pytest.approx(10.0, abs=1.0)
    short.join(5.0)
    assert "short" in ended and "long" not in ended
    assert clock.earliest_wait(["short", "long"]) is None  # "short" no longer waits: it runs (or ended)
    assert clock.earliest_wait(["long"]) == pytest.approx(start + 30.0, abs=1.0)
    _step_once(clock, ["long"])
    long.join(5.0)
    assert ended["long"] - start == pytest.approx(30.0, abs=1.0)
    assert ended["short"] < ended["long"]


def test_clock_waits_no_step_while_a_running_execution_does_not_wait() -> None:
    """Moving the clock while an execution works would take simulated time from it: no step then."""
    clock = SimClock()
    ended: dict[str, float] = {}
    _waiting(clock, "a", 30.0, ended)
    _until(lambda: clock.earliest_wait(["a"]) is not None)
    assert clock.earliest_wait(["a", "busy"]) is None
    assert clock.earliest_wait([]) is None  # nothing runs: no execution wait to step to
    clock.advance(31.0)


def test_clock_waits_end_by_themselves_without_a_runner() -> None:
    """Simulated time runs with work time: a wait nobody steps ends after about its length in wall time
    (a runner that does not know of a wait costs speed, never a deadlock)."""
    clock = SimClock()
    ended: dict[str, float] = {}
    began = time.monotonic()
    _waiting(clock, "a", 0.3, ended).join(5.0)
    assert "a" in ended
    assert 0.25 <= time.monotonic() - began < 2.0


def test_clock_waits_a_thread_acting_for_no_execution_advances_the_clock() -> None:
    """The runner's own thread (SQS deliveries invoke functions synchronously on it): nothing else would
    move the clock for it, so its waits advance the clock as before."""
    clock = SimClock()
    assert acting_execution() is None
    before = time.monotonic()
    clock.sleep(3600.0)
    assert time.monotonic() - before < 0.5
    assert clock.simulated_seconds == pytest.approx(3600.0)


def test_clock_waits_the_runner_is_woken_when_a_wait_begins() -> None:
    """The runner blocks on the waits' generation: a new wait wakes it at once (a step costs
    milliseconds, not a poll interval)."""
    clock = SimClock()
    seen = clock.waits_generation
    ended: dict[str, float] = {}
    threading.Timer(0.05, lambda: _waiting(clock, "a", 30.0, ended)).start()
    began = time.monotonic()
    clock.wait_for_waits(seen, timeout=5.0)
    assert time.monotonic() - began < 1.0
    _until(lambda: clock.earliest_wait(["a"]) is not None)
    clock.advance(31.0)


def test_clock_waits_acting_for_nests_and_restores() -> None:
    with acting_for("outer"):
        with acting_for("inner"):
            assert acting_execution() == "inner"
        assert acting_execution() == "outer"
    assert acting_execution() is None
