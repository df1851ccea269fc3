"""``make drill``'s records and verdict: per incident, the notifications sent, the time to page, the ``ops``
commands used and their AWS call counts; ``--check``'s three rules (issue 41, point 8):

- at most one notification per incident (a person is told once: page or ticket), none at the stack's start
  or for a business outcome (a declined card);
- no notification while an operator acts (looking, repairing, resolving never pages);
- no command whose AWS calls grow with history: the same command run at two history sizes makes as many calls.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Notification:
    """One alarm notification as the on-call receives it (the topic says page or ticket)."""

    alarm: str
    state: str
    at: float  # simulated seconds since the epoch
    severity: str  # page | ticket | other (the topic it went to)
    runbook: str = ""  # the link at the end of the alarm's description


@dataclass(frozen=True)
class CommandRun:
    """One ``python -m ops`` command as the drill typed it (target options left out), and what it cost."""

    argv: tuple[str, ...]
    calls: int
    operations: dict[str, int]
    exit_code: int
    output: str = ""
    question: str = ""  # the 3 a.m. question it answers, if any

    @property
    def text(self) -> str:
        return " ".join(self.argv)


@dataclass
class IncidentRun:
    name: str
    started_at: float
    notifications: list[Notification] = field(default_factory=list)
    operator_notifications: list[Notification] = field(default_factory=list)
    commands: list[CommandRun] = field(default_factory=list)
    note: str = ""
    #: Nothing should notify at all (the stack's start, a business outcome).
    expect_none: bool = False

    @property
    def time_to_page(self) -> float | None:
        """Simulated seconds from the incident's start to its first notification."""
        return round(self.notifications[0].at - self.started_at, 1) if self.notifications else None


@dataclass(frozen=True)
class Growth:
    """One command at two history sizes (orders in the table, executions of the state machine)."""

    command: str
    small_history: int
    large_history: int
    small_calls: int
    large_calls: int


def _by_severity(notes: Iterable[Notification]) -> str:
    counts: dict[str, int] = {}
    for n in notes:
        counts[n.severity] = counts.get(n.severity, 0) + 1
    return ", ".join(f"{v} {k}{'s' if v != 1 else ''}" for k, v in counts.items())


def judge(incidents: list[IncidentRun], growth: list[Growth]) -> list[str]:
    """``--check``'s failures, one line each (empty: the drill passes)."""
    failures = []
    for i in incidents:
        if i.expect_none and i.notifications:
            count = len(i.notifications)
            failures.append(
                f"{i.name}: {count} notification{'s' if count > 1 else ''} ({_by_severity(i.notifications)}), "
                "none expected"
            )
        elif len(i.notifications) > 1:
            failures.append(
                f"{i.name}: {len(i.notifications)} notifications ({_by_severity(i.notifications)}), "
                "at most 1 per incident"
            )
        if i.operator_notifications:
            alarms = ", ".join(f"{n.alarm} {n.state}" for n in i.operator_notifications)
            count = len(i.operator_notifications)
            failures.append(
                f"{i.name}: {count} notification{'s' if count > 1 else ''} while the operator acted ({alarms})"
            )
    for g in growth:
        if g.large_calls > g.small_calls:
            failures.append(
                f"`ops {g.command}`: {g.small_calls} AWS calls at {g.small_history} orders of history, "
                f"{g.large_calls} at {g.large_history}: grows"
            )
    return failures


def shape(argv: tuple[str, ...]) -> str:
    """A command as typed, its order, correlation and DLQ message IDs as ``<id>`` and its ``--reason`` as
    ``"..."``."""
    words, after = [], ""
    for word in argv:
        if after == "--reason":
            words.append('"..."')
        elif after == "--message-id" or word.startswith(("drill-", "cid-drill-")):
            words.append("<id>")
        else:
            words.append(word)
        after = word
    return " ".join(words)


def _grouped(commands: list[CommandRun]) -> list[str]:
    """``ops <command>`` (AWS calls), a command typed for several orders once with ``xN``."""
    groups: dict[str, list[int]] = {}
    for c in commands:
        groups.setdefault(shape(c.argv), []).append(c.calls)
    out = []
    for text, calls in groups.items():
        spread = f"{min(calls)}" if min(calls) == max(calls) else f"{min(calls)}-{max(calls)}"
        out.append(f"`ops {text}` ({spread})" + (f" x{len(calls)}" if len(calls) > 1 else ""))
    return out


def drill_table(incidents: list[IncidentRun], growth: list[Growth]) -> list[str]:
    """The drill's table (Markdown): per incident, then the commands at two history sizes."""
    lines = [
        "| incident | notifications | time to page (simulated) | from operator actions | commands (AWS calls) |",
        "|---|---|---|---|---|",
    ]
    for i in incidents:
        notes = ", ".join(f"{n.severity} {n.alarm.split('-', 2)[-1]}" for n in i.notifications) or "none"
        ttp = f"{i.time_to_page:g} s" if i.time_to_page is not None else "-"
        commands = "; ".join(_grouped(i.commands)) or "-"
        count = len(i.notifications)
        lines.append(f"| {i.name} | {count}: {notes} | {ttp} | {len(i.operator_notifications)} | {commands} |")
    if growth:
        lines += ["", "| command | history (orders) | AWS calls | grows |", "|---|---|---|---|"]
        for g in growth:
            grows = "yes" if g.large_calls > g.small_calls else "no"
            lines.append(
                f"| `ops {g.command}` | {g.small_history} -> {g.large_history} | "
                f"{g.small_calls} -> {g.large_calls} | {grows} |"
            )
    return lines
