"""``make drill``'s ``--check`` (issue 41, point 8): what fails the drill, judged on its records, no emulator.

More than one notification for an incident, any notification while an operator acted, and a command whose
AWS calls grow with the history (the same command at two history sizes) each fail it.
"""

from __future__ import annotations

from harness.drill.judge import CommandRun, Growth, IncidentRun, Notification, drill_table, judge


def _note(alarm: str, at: float, severity: str = "page") -> Notification:
    return Notification(alarm=alarm, state="ALARM", at=at, severity=severity, runbook="docs/runbooks/x.md")


def _command(argv: str, calls: int) -> CommandRun:
    return CommandRun(argv=tuple(argv.split()), calls=calls, operations={"DynamoDB.GetItem": calls}, exit_code=0)


def _incident(name: str, notes: list[Notification], operator: list[Notification] | None = None) -> IncidentRun:
    return IncidentRun(
        name=name,
        started_at=100.0,
        notifications=notes,
        operator_notifications=operator or [],
        commands=[_command("order o-1", 2)],
    )


def test_drill_judge_passes_one_notification_per_incident_and_flat_calls() -> None:
    incidents = [_incident("poison message", [_note("OrdersDlq", 160.0)]), _incident("declined card", [])]
    growth = [Growth("order o-1", small_history=10, large_history=60, small_calls=2, large_calls=2)]
    assert judge(incidents, growth) == []


def test_drill_judge_fails_on_more_than_one_notification_per_incident() -> None:
    notes = [_note("ParkedOrders", 200.0), *(_note(f"Ticket{i}", 200.0, "ticket") for i in range(3))]
    failures = judge([_incident("parked orders after an outage", notes)], [])
    assert failures == ["parked orders after an outage: 4 notifications (1 page, 3 tickets), at most 1 per incident"]


def test_drill_judge_fails_on_a_notification_from_an_operator_action() -> None:
    failures = judge([_incident("parked orders", [_note("Parked", 1.0)], operator=[_note("SagaFailed", 300.0)])], [])
    assert failures == ["parked orders: 1 notification while the operator acted (SagaFailed ALARM)"]


def test_drill_judge_fails_on_a_command_whose_calls_grow_with_history() -> None:
    growth = [Growth("repair o-1 --action redrive", small_history=10, large_history=60, small_calls=4, large_calls=7)]
    failures = judge([], growth)
    assert failures == ["`ops repair o-1 --action redrive`: 4 AWS calls at 10 orders of history, 7 at 60: grows"]


def test_drill_table_shows_time_to_page_and_call_counts() -> None:
    text = "\n".join(drill_table([_incident("poison message", [_note("OrdersDlq", 160.0)])], []))
    assert "poison message" in text and "60 s" in text and "`ops order o-1` (2)" in text


def test_drill_judge_fails_on_any_notification_where_none_is_expected() -> None:
    """The stack's start and a declined card (a business outcome) notify nobody: one notification fails."""
    start = _incident("start (local stack up)", [_note("OrdersDlq", 1.0)])
    start.expect_none = True
    assert judge([start], []) == ["start (local stack up): 1 notification (1 page), none expected"]


def test_drill_table_shows_a_discard_without_its_message_id_or_reason() -> None:
    """``ops dlq discard`` as the table shows it: the DLQ message's ID as ``<id>``, like an order's."""
    argv = "dlq discard --queue orders --message-id 3f1c9a2e-0b4d-4c61-9d7e-5a8e2b6f0c11 --reason poison"
    incident = _incident("poison message", [_note("OrdersAtRisk", 160.0)])
    incident.commands = [_command(argv, 3)]
    text = "\n".join(drill_table([incident], []))
    assert '`ops dlq discard --queue orders --message-id <id> --reason "..."` (3)' in text
