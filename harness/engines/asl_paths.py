"""Every path of a state machine's graph, its tasks stubbed, for two ASL engines to run and compare.

A path is what each Task state it enters does: succeed (``None``), or fail with one error, every attempt,
so the state's ``Retry`` runs out before its ``Catch`` (or nothing) takes it on. The error of a catcher is
the first it names that no earlier catcher takes; for ``States.ALL`` it is the first error a retrier names
(so its retries are exercised), else :data:`UNNAMED`. A Task no catcher takes every error from has
one more path: an error caught by nothing (:data:`UNCAUGHT`), which fails the execution.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

ACCOUNT, REGION = "123456789012", "us-east-1"
ALL = "States.ALL"
#: The error of a catch-all no retrier names an error for (a task's own error may not start with ``States.``).
UNNAMED = "EnginesUnnamedError"
UNCAUGHT = "EnginesUncaughtError"
#: What every stub returns (the fields the saga's ResultSelectors read: an SQS task's MessageId).
STUB_RESULT: dict[str, Any] = {"MessageId": "engines-message", "Payload": {}}
#: The execution input of every path (the saga's Parameters read these).
INPUT: dict[str, Any] = {"order_id": "engines-order", "payment_attempt": 1, "correlation_id": "engines-cid"}


@dataclass(frozen=True)
class Path:
    """States entered in order, each Task's outcome (an error name, or None: success), the expected end."""

    states: tuple[str, ...]
    outcomes: dict[str, str | None]
    expected_status: str

    @property
    def name(self) -> str:
        steps = [f"{s}!{self.outcomes[s]}" if self.outcomes.get(s) else s for s in self.states]
        return "-".join(steps)


@dataclass
class Run:
    """What an engine did on one path: states entered, retries per state, end status and error."""

    entered: list[str]
    retries: dict[str, int] = field(default_factory=dict)
    status: str = "FAILED"
    error: str | None = None


def _caught(catchers: list[dict[str, Any]], error: str) -> bool:
    return any(error in c["ErrorEquals"] or ALL in c["ErrorEquals"] for c in catchers)


def _catch_error(state: dict[str, Any], index: int) -> str:
    """An error the ``index``-th catcher takes and no earlier one does."""
    earlier, catcher = state["Catch"][:index], state["Catch"][index]
    names = [n for n in catcher["ErrorEquals"] if n != ALL]
    if ALL in catcher["ErrorEquals"]:
        names += [n for r in state.get("Retry", []) for n in r["ErrorEquals"] if n != ALL] + [UNNAMED]
    for name in names:
        if not _caught(earlier, name):
            return name
    raise ValueError(f"catcher {index} takes no error an earlier catcher does not: {catcher}")


def _edges(state: dict[str, Any]) -> list[tuple[str | None, str | None]]:
    """(outcome, next state or None at an end) of a Task state."""
    edges: list[tuple[str | None, str | None]] = [(None, state.get("Next"))]
    catchers = state.get("Catch", [])
    edges += [(_catch_error(state, i), c["Next"]) for i, c in enumerate(catchers)]
    if not any(ALL in c["ErrorEquals"] for c in catchers):
        edges.append((UNCAUGHT, None))
    return edges


def enumerate_paths(definition: dict[str, Any]) -> list[Path]:
    """Every path from ``StartAt`` to an end, depth first; a cycle or a Choice state is refused."""
    states: dict[str, Any] = definition["States"]
    out: list[Path] = []

    def walk(name: str, seen: tuple[str, ...], outcomes: dict[str, str | None]) -> None:
        if name in seen:
            raise NotImplementedError(f"a cycle through {name}: paths are not finite")
        state, here = states[name], (*seen, name)
        kind = state["Type"]
        if kind in ("Succeed", "Fail"):
            out.append(Path(here, outcomes, "SUCCEEDED" if kind == "Succeed" else "FAILED"))
        elif kind == "Task":
            for outcome, target in _edges(state):
                step = {**outcomes, name: outcome}
                if target is not None:
                    walk(target, here, step)
                else:
                    out.append(Path(here, step, "SUCCEEDED" if outcome is None else "FAILED"))
        elif kind in ("Pass", "Wait"):
            if state.get("End"):
                out.append(Path(here, outcomes, "SUCCEEDED"))
            else:
                walk(state["Next"], here, outcomes)
        else:  # Choice (its branches need inputs that steer it), Map, Parallel
            raise NotImplementedError(f"{name}: a {kind} state's paths are not enumerated")

    walk(definition["StartAt"], (), {})
    return out


def stub_function_arn(state: str) -> str:
    return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:stub-{state}"


def stub_definition(definition: dict[str, Any]) -> dict[str, Any]:
    """The definition with each Task's Resource a stub function of its own (Retry, Catch, paths kept)."""
    stubbed = copy.deepcopy(definition)
    for name, state in stubbed["States"].items():
        if state["Type"] == "Task":
            state["Resource"] = stub_function_arn(name)
    return stubbed


def compare_runs(emulator: Run, other: Run) -> list[str]:
    """Each aspect where the two runs differ, as ``aspect: emulator's != other's``."""
    out = []
    for aspect in ("entered", "retries", "status", "error"):
        mine, theirs = getattr(emulator, aspect), getattr(other, aspect)
        if mine != theirs:
            out.append(f"{aspect}: {mine} != {theirs}")
    return out
