"""The event loop for any deployed app: SQS event sources, Step Functions executions, EventBridge schedules and
CloudWatch's alarm evaluation, moved forward together on the simulated clock.

:class:`Driver` wraps a running :class:`~local_cloud.emulator.LocalCloud`. :meth:`Driver.drain` delivers until every
queue is empty and no execution runs, letting simulated time pass when only time can move things (a failed
message's visibility timeout, a Retry's wait, a delayed message); :meth:`Driver.turn` is one step of that loop for a
long-running service (``python -m local_cloud up``). Alarms are evaluated at each simulated minute and before
each jump of the clock, as CloudWatch evaluates every minute whatever the app does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from local_cloud.schedules import Schedules
from local_cloud.sfn_waits import running_executions

if TYPE_CHECKING:
    from local_cloud.emulator import LocalCloud

#: The event EventBridge sends a scheduled rule's target.
SCHEDULED_EVENT = {"source": "aws.events", "detail-type": "Scheduled Event"}
#: Wall seconds the loop waits at most while executions run and no message is deliverable.
EXECUTION_POLL_SECONDS = 0.25


def run_executions(clock: Any, step_waiting: Callable[[], str | None]) -> None:
    """While executions run and nothing else is due: ``step_waiting()`` steps the clock each time every running
    execution waits (``"due"``: a message or a scheduled run is due, return; ``"wait"``: stepped, go on), woken by
    ``clock`` when a wait begins or an execution ends, until none runs or :data:`EXECUTION_POLL_SECONDS` pass
    without a step (an execution is working: the caller's next turn polls again)."""
    deadline = time.monotonic() + EXECUTION_POLL_SECONDS
    seen_running = bool(running_executions())  # False through a moto server elsewhere: then poll
    while (left := deadline - time.monotonic()) > 0:
        seen = clock.waits_generation
        stepped = step_waiting()
        if stepped == "due":
            return
        if stepped == "wait":
            deadline = time.monotonic() + EXECUTION_POLL_SECONDS
            continue
        if seen_running and not running_executions():
            return  # the last one ended: the loop settles
        clock.wait_for_waits(seen, left)


class Driver:
    """Moves a running :class:`~local_cloud.emulator.LocalCloud` forward: deliveries, executions, schedules, alarms."""

    def __init__(self, cloud: LocalCloud) -> None:
        self.cloud = cloud
        self.clock = cloud.clock
        self.schedules: Schedules[Any] = Schedules(list(cloud.deployment.schedules), cloud.clock.now())
        self._alarm_minute: int | None = None

    def invocations(self) -> int:
        """Function invocations so far (progress: a stalled app invokes nothing)."""
        return sum(len(fn.history) for fn in self.cloud.deployment.functions.values())

    def tick_alarms(self, *, force: bool = False) -> None:
        """Evaluate the alarms when the simulated clock entered a new minute, or now (``force``: before a jump)."""
        minute = int(self.clock.now() // 60)
        if force or minute != self._alarm_minute:
            self._alarm_minute = minute
            self.cloud.evaluate_alarms()

    def fire_schedules(self) -> int:
        """Run each scheduled target whose time has come (as EventBridge would); how many ran."""
        due = self.schedules.due(self.clock.now())
        for rule, _ in due:
            rule.target.invoke(dict(SCHEDULED_EVENT))
        return len(due)

    def step_clock(self, seconds: float) -> None:
        """Move the clock ``seconds`` ahead, stopping at each scheduled run on the way, alarms evaluated before."""
        end = self.clock.now() + seconds
        while (upcoming := self.schedules.next_at()) is not None and upcoming <= end:
            self.tick_alarms(force=True)
            self.clock.advance(max(0.0, upcoming - self.clock.now()))
            self.fire_schedules()
        self.tick_alarms(force=seconds >= 60)
        self.clock.advance(max(0.0, end - self.clock.now()))

    def _due_at(self) -> float:
        times = (self.cloud.next_visible_at(), self.cloud.next_delayed_at(), self.schedules.next_at())
        return min((t for t in times if t is not None), default=float("inf"))

    def step_waiting_executions(self) -> str | None:
        """When every running execution waits for simulated time, step the clock to the earliest of the first
        wait's end, the next due message or schedule and the next minute. "due", "wait", or None (no step)."""
        now = self.clock.now()
        target = self.clock.earliest_wait(running_executions())
        if target is None:
            return None
        due = self._due_at()
        if due <= now:
            return "due"
        step_to = min(target, due, (now // 60 + 1) * 60)
        self.step_clock(step_to - now)
        self.tick_alarms()
        return "due" if step_to == due else "wait"

    def run_executions(self) -> None:
        """While executions run: step the clock whenever all of them wait (:func:`run_executions`)."""
        run_executions(self.clock, self.step_waiting_executions)

    def turn(self) -> bool:
        """One step of the loop; False when nothing is left to do (every queue empty, no execution running)."""
        self.fire_schedules()
        self.tick_alarms()
        if self.cloud.deliver():
            return True
        if running_executions():
            self.run_executions()
            return True
        upcoming = self.cloud.next_visible_at()
        if upcoming is None and self.cloud.queued():
            upcoming = self.cloud.next_delayed_at() or self.clock.now() + 1.0
        if upcoming is not None:
            self.step_clock(max(0.0, upcoming - self.clock.now()))
            return True
        return False

    def drain(self, timeout_seconds: float = 60.0) -> None:
        """Turn until nothing is left to do; TimeoutError when nothing moved (no delivery, no invocation)
        for ``timeout_seconds`` of wall time."""
        deadline, moved = time.monotonic() + timeout_seconds, self.invocations()
        while time.monotonic() < deadline:
            if not self.turn():
                self.tick_alarms(force=True)  # settled: what happened this minute is evaluated now
                return
            if (now_moved := self.invocations()) != moved:
                moved, deadline = now_moved, time.monotonic() + timeout_seconds
        raise TimeoutError(f"no progress (no function invoked) for {timeout_seconds:g} s")
