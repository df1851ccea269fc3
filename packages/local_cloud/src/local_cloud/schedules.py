"""EventBridge scheduled rules on the simulated clock: when each rule's target runs.

A rate expression "starts when you create the scheduled event rule, and then it runs on a defined
schedule": ``rate(value unit)``, unit ``minute | minutes | hour | hours | day | days``, singular for 1
and plural otherwise (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rate-expressions.html).
The first run is one interval after the deployment. Cron expressions are not emulated (refused: no
rule of the template uses one). The caller fires what is due and may pause a target (a stopped
schedule, for the pager's recall).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from local_cloud.errors import LocalCloudError

T = TypeVar("T")

_RATE = re.compile(r"rate\((?P<value>[1-9][0-9]*) (?P<unit>minute|minutes|hour|hours|day|days)\)")
_UNIT_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}


class ScheduleNotEmulated(LocalCloudError, ValueError):
    """A schedule expression the local run does not evaluate (cron, or not a valid rate)."""


def rate_seconds(expression: str) -> float:
    """The interval of an EventBridge ``rate(...)`` expression, in seconds."""
    match = _RATE.fullmatch(expression.strip())
    if match is None:
        raise ScheduleNotEmulated(f"schedule expression not emulated (only rate(value unit)): {expression!r}")
    value, unit = int(match["value"]), match["unit"]
    if (value == 1) != (not unit.endswith("s")):
        raise ScheduleNotEmulated(f"{expression!r}: the unit is singular for 1 and plural otherwise (EventBridge)")
    return float(value * _UNIT_SECONDS[unit.rstrip("s")])


@dataclass
class Scheduled(Generic[T]):
    """One rule's target: its interval, its next run, and a pause (runs skipped until ``paused_until``)."""

    target: T
    interval: float
    next_at: float
    paused_from: float | None = None
    paused_until: float | None = None
    fired: list[float] = field(default_factory=list)
    skipped: list[float] = field(default_factory=list)

    def paused_at(self, at: float) -> bool:
        start, until = self.paused_from, self.paused_until
        return start is not None and until is not None and start <= at < until


class Schedules(Generic[T]):
    """The rate schedules of a deployment, from ``created_at`` (simulated seconds)."""

    def __init__(self, rules: list[tuple[str, T]], created_at: float) -> None:
        self.rules = [Scheduled(target, rate_seconds(expr), created_at + rate_seconds(expr)) for expr, target in rules]

    def next_at(self) -> float | None:
        """When the earliest next run is due."""
        return min((r.next_at for r in self.rules), default=None)

    def due(self, now: float) -> list[tuple[Scheduled[T], float]]:
        """Every run due at or before ``now``, in time order, as (rule, scheduled time); paused runs are
        recorded as skipped and not returned. Each returned run counts as fired."""
        runs: list[tuple[Scheduled[T], float]] = []
        for rule in self.rules:
            while rule.next_at <= now:
                at, rule.next_at = rule.next_at, rule.next_at + rule.interval
                if rule.paused_at(at):
                    rule.skipped.append(at)
                else:
                    rule.fired.append(at)
                    runs.append((rule, at))
        return sorted(runs, key=lambda run: run[1])

    def pause(self, rule: Scheduled[T], start: float, until: float) -> None:
        """Skip ``rule``'s runs scheduled in [start, until) (the schedule stopped, e.g. a disabled rule)."""
        rule.paused_from, rule.paused_until = start, until
