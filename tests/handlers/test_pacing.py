"""The sweeper's provider lookups: paced below the read limit, a bounded number at once (order_domain.pacing)."""

from __future__ import annotations

import contextvars
import threading
import time

from order_domain.pacing import Pacer, paced, run_bounded


class _Clock:
    """Time that moves only when the pacer sleeps."""

    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds


class _Provider:
    def __init__(self, clock: _Clock) -> None:
        self.clock = clock
        self.calls: list[float] = []

    def find_charge(self, key: str) -> str:
        self.calls.append(self.clock.now())
        return key

    def charge(self, key: str) -> str:  # not a lookup: never paced
        return key


def test_pacing_keeps_lookups_at_the_rate_in_any_second() -> None:
    clock = _Clock()
    provider = _Provider(clock)
    lookups = paced(provider, Pacer(12.5, clock=clock.now, sleep=clock.sleep))
    for n in range(100):
        assert lookups.find_charge(f"k{n}") == f"k{n}"
    assert lookups.charge("x") == "x" and len(provider.calls) == 100
    # 12 at once (one second of the rate), then 12.5 a second: 100 lookups take about 7 s, never 25 in a second
    assert 6.5 < provider.calls[-1] < 7.5
    for start in range(8):
        assert sum(start <= t < start + 1 for t in provider.calls) <= 25


def test_pacing_shared_by_threads_never_exceeds_its_tokens() -> None:
    pacer = Pacer(1000.0)
    run_bounded(lambda _: pacer.take(), range(300), workers=8)
    assert pacer.taken == 300


def test_pacing_run_bounded_runs_at_most_workers_at_once() -> None:
    lock, running, peak = threading.Lock(), [0], [0]

    def act(_: int) -> None:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.01)
        with lock:
            running[0] -= 1

    started = time.monotonic()
    run_bounded(act, range(40), workers=8)
    assert peak[0] == 8
    assert time.monotonic() - started < 40 * 0.01  # faster than one at a time


def test_pacing_run_bounded_runs_each_action_in_a_copy_of_the_callers_context() -> None:
    """What the caller's context holds (the trace context, for one) reaches every worker; what an action sets
    stays its own."""
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    var.set("caller")
    seen: list[str] = []

    def act(n: int) -> None:
        seen.append(var.get())
        var.set(f"action-{n}")

    run_bounded(act, range(6), workers=3)
    assert seen == ["caller"] * 6 and var.get() == "caller"
