"""EventBridge rate schedules on the simulated clock (local_cloud.schedules)."""

from __future__ import annotations

import pytest

from local_cloud.schedules import ScheduleNotEmulated, Schedules, rate_seconds


@pytest.mark.parametrize(
    ("expression", "seconds"),
    [("rate(1 minute)", 60), ("rate(5 minutes)", 300), ("rate(1 hour)", 3600), ("rate(2 days)", 172800)],
)
def test_schedules_rate_seconds_as_eventbridge_reads_them(expression: str, seconds: float) -> None:
    assert rate_seconds(expression) == seconds


@pytest.mark.parametrize("expression", ["rate(1 hours)", "rate(5 hour)", "rate(0 minutes)", "cron(0/5 * * * ? *)"])
def test_schedules_refuse_what_eventbridge_refuses_or_is_not_emulated(expression: str) -> None:
    with pytest.raises(ScheduleNotEmulated):
        rate_seconds(expression)


def test_schedules_runs_due_from_creation_and_a_pause_skips_them() -> None:
    schedules = Schedules([("rate(5 minutes)", "sweeper")], created_at=1000.0)
    assert schedules.due(1299.0) == []  # the first run is one interval after the rule was created
    (rule,) = schedules.rules
    assert [at for _, at in schedules.due(1900.0)] == [1300.0, 1600.0, 1900.0]
    schedules.pause(rule, 2000.0, 2600.0)
    assert [at for _, at in schedules.due(3100.0)] == [2800.0, 3100.0]
    assert rule.skipped == [2200.0, 2500.0]
