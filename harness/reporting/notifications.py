"""Notifications per incident (issue 41, point 2): what an on-call's phone received, grouped by incident.

A notification is every alarm action CloudWatch ran (:class:`local_cloud.alarm_actions.Notice`), page or
ticket, delivered or refused. They are grouped into incidents:

- an incident the run injected (``report["incidents"]``) claims the notifications from its start to
  :data:`INCIDENT_GAP_SECONDS` after its end;
- the others form incidents by time: a notification within :data:`INCIDENT_GAP_SECONDS` of the previous
  one of an incident joins it. Ten minutes is the longest period of the stack's alarms (StuckOrders,
  SideEffectMismatches, ParkedOrders, the heartbeat): the signals of one cause land within it.

A notification during an ``ops`` command the run made (``report["ops_commands"]``: the replay of
``--replay-transient``) or up to :data:`OPS_SETTLE_SECONDS` after it was caused by that command; one at the
deployment's start (``report["notifications_at_start"]``) was caused by the deploy. ``--check`` fails on
either, and on an incident with more than one notification (:mod:`harness.reporting.invariants`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

#: Notifications this close together (simulated seconds) belong to one incident: the longest alarm period.
INCIDENT_GAP_SECONDS = 600.0
#: After an ``ops`` command, the alarms' next evaluation (one minute) still reads what it did.
OPS_SETTLE_SECONDS = 60.0


def composite_kinds(
    transitions: Sequence[tuple[str, str, float]],
    rules: Mapping[str, Iterable[str]],
    kind_of: Mapping[str, str],
) -> dict[tuple[str, float], list[str]]:
    """For each composite's ALARM transition ``(name, at)``: the kinds of its alarms in ALARM at some time
    before the composite's next OK (what the incident it opened covered), most frequent first."""
    out: dict[tuple[str, float], list[str]] = {}
    for name, children in rules.items():
        members = set(children)
        mine = [(new, at) for n, new, at in transitions if n == name]
        for i, (new, start) in enumerate(mine):
            if new != "ALARM":
                continue
            end = next((at for state, at in mine[i + 1 :] if state != "ALARM"), float("inf"))
            counts: dict[str, int] = {}
            for child in members:
                if _in_alarm_during(transitions, child, start, end):
                    kind = kind_of.get(child, "other")
                    counts[kind] = counts.get(kind, 0) + 1
            out[(name, start)] = sorted(counts, key=lambda k: (-counts[k], k))
    return out


def _in_alarm_during(transitions: Sequence[tuple[str, str, float]], name: str, start: float, end: float) -> bool:
    """Whether alarm ``name`` was in ALARM at some instant of ``[start, end]``."""
    state = "INSUFFICIENT_DATA"
    for n, new, at in transitions:
        if n != name:
            continue
        if at > end:
            break
        if at <= start:
            state = new
        elif new == "ALARM":
            return True
    return state == "ALARM"


def per_incident(
    notifications: Sequence[Mapping[str, Any]],
    incidents: Sequence[Mapping[str, Any]],
    ops_commands: Sequence[Mapping[str, Any]],
    started: float = 0.0,
) -> dict[str, Any]:
    """``{"incidents": [{incident, notifications, alarms}], "caused_by_ops": [...]}``; times are simulated,
    labels in seconds after ``started`` (the run's start)."""
    by_ops: list[dict[str, Any]] = []
    rest: list[dict[str, Any]] = []
    for n in notifications:
        command = next(
            (c for c in ops_commands if c["started_at"] <= n["at"] <= c["ended_at"] + OPS_SETTLE_SECONDS), None
        )
        (by_ops if command else rest).append({**n, "ops_command": command["command"] if command else None})
    groups: list[dict[str, Any]] = []
    injected = sorted((i for i in incidents if i.get("started_at") is not None), key=lambda i: float(i["started_at"]))
    for n in sorted(rest, key=lambda n: n["at"]):
        claim = [
            i for i in injected if i["started_at"] <= n["at"] <= (i.get("ended_at") or n["at"]) + INCIDENT_GAP_SECONDS
        ]
        if claim:
            label = f"{claim[-1]['family']} at {claim[-1]['started_at'] - started:.0f} s"
            group = next((g for g in groups if g["incident"] == label), None)
        else:
            last = groups[-1] if groups and not groups[-1]["injected"] else None
            near = last is not None and n["at"] - last["last_at"] <= INCIDENT_GAP_SECONDS
            group, label = (last if near else None), f"from {n['at'] - started:.0f} s"
        if group is None:
            group = {"incident": label, "injected": bool(claim), "notifications": 0, "alarms": [], "last_at": n["at"]}
            groups.append(group)
        group["notifications"] += 1
        group["alarms"].append(n["alarm"])
        group["last_at"] = n["at"]
    return {"incidents": groups, "caused_by_ops": by_ops}


def notification_lines(section: Mapping[str, Any], at_start: int) -> list[str]:
    """The report's lines: notifications per incident, at start, caused by ops commands."""
    lines = [f"notifications at the deployment's start: {at_start}"]
    for group in section.get("incidents", []):
        names = ", ".join(a.split("-", 2)[-1] for a in group["alarms"])
        lines.append(f"incident {group['incident']}: {group['notifications']} notifications ({names})")
    for n in section.get("caused_by_ops", []):
        lines.append(f"caused by ops {n['ops_command']}: {n['alarm']}")
    return lines


def notifications_at_start(run: Any) -> int:
    """The deployment's first evaluation, before any order (``ops local up`` does the same): the notifications
    it sent, 0 by design (no OK actions: decision 0030)."""
    run.evaluate_alarms()
    return len(run.alarm_evaluator.actions.history) if run.alarm_evaluator.actions else 0
