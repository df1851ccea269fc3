"""Notifications per incident (issue 41, point 2): grouping, and the ``--check`` that fails above one per
incident, on any notification an ``ops`` command caused and on any at the deployment's start."""

from __future__ import annotations

from typing import Any

from harness.reporting.invariants import CHECKS
from harness.reporting.notifications import composite_kinds, per_incident

CHECK = CHECKS["one_notification_per_incident_none_from_deploys_or_ops"]
#: What one parked order sent before the composite (the local run, --status-write-fail-rate 0.1, seed 7).
PARKED_ORDER = [
    ("NeedsAttentionQueueQueueDepthAlarm", 27.5),
    ("OrderSagaExecutionsFailedAlarm", 27.5),
    ("ShipOrderErrorsAlarm", 32.2),
    ("NeedsAttentionQueueQueueArrivalsAlarm", 87.5),
    ("ParkedOrdersAlarm", 300.8),
]


def _notices(rows: list[tuple[str, float]]) -> list[dict[str, Any]]:
    return [{"alarm": a, "state": "ALARM", "at": at} for a, at in rows]


def test_notifications_per_incident_a_parked_orders_five_alarms_are_one_incident() -> None:
    section = per_incident(_notices(PARKED_ORDER), [], [])
    assert [g["notifications"] for g in section["incidents"]] == [5]
    why = CHECK({"notifications": section, "notifications_at_start": 0})
    assert why and "more than one notification" in why


def test_notifications_per_incident_apart_by_more_than_the_gap_are_two() -> None:
    section = per_incident(_notices([("OrdersAtRisk", 10.0), ("OrdersAtRisk", 10.0 + 601.0)]), [], [])
    assert [g["notifications"] for g in section["incidents"]] == [1, 1]
    assert CHECK({"notifications": section, "notifications_at_start": 0}) is None


def test_notifications_per_incident_an_injected_incident_claims_its_window() -> None:
    incidents = [{"family": "provider_outage", "started_at": 100.0, "ended_at": 190.0}]
    section = per_incident(_notices([("OrdersAtRisk", 50.0), ("PaymentOutage", 130.0)]), incidents, [])
    assert [(g["injected"], g["notifications"]) for g in section["incidents"]] == [(False, 1), (True, 1)]


def test_notifications_per_incident_a_notification_during_an_ops_command_fails_the_check() -> None:
    ops = [{"command": "dlq replay", "started_at": 500.0, "ended_at": 520.0}]
    section = per_incident(_notices([("OrdersQueueDlqArrivalsAlarm", 560.0)]), [], ops)
    assert section["incidents"] == []
    why = CHECK({"notifications": section, "notifications_at_start": 0})
    assert why and "caused by ops commands" in why and "dlq replay" in why


def test_notifications_per_incident_a_notification_at_start_fails_the_check() -> None:
    why = CHECK({"notifications": {"incidents": [], "caused_by_ops": []}, "notifications_at_start": 2})
    assert why and "at the deployment's start" in why


def test_notifications_per_incident_composite_kinds_cover_its_incident() -> None:
    transitions = [
        ("depth", "ALARM", 27.5),
        ("composite", "ALARM", 27.5),
        ("errors", "ALARM", 32.2),
        ("depth", "OK", 400.0),
        ("errors", "OK", 92.0),
        ("composite", "OK", 400.0),
        ("errors", "ALARM", 500.0),  # after the incident: the next one's
        ("composite", "ALARM", 500.0),
    ]
    kinds = composite_kinds(
        transitions, {"composite": ["depth", "errors"]}, {"depth": "needs_attention", "errors": "function"}
    )
    assert sorted(kinds[("composite", 27.5)]) == ["function", "needs_attention"]
    assert kinds[("composite", 500.0)] == ["function"]
