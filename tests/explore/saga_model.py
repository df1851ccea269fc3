"""The order saga's state machine as data, read from the synthesized definition, and an execution that a
rule moves one Task at a time.

The routes are the template's own: ``saga.asl.json`` beside this module is the dev stack's state machine
definition as ``tools/export_asl.py`` resolves it (``python -m tools.export_asl cdk.out OrderPipeline-dev
<dir>`` after ``make synth``), and ``tests/ops/test_saga_graph.py`` fails when it is not the synthesized
one. Each Task state becomes a :class:`Spec`: the function it invokes (its logical ID: ``ReserveInventory``
for ``ReserveInventoryFunction<hash>``; None for a direct service integration), where success goes, its
catchers in order and its retriers with their ``MaxAttempts``. Fail states end the execution FAILED,
Succeed states and ``End`` SUCCEEDED. So each step of the exploration is one invocation of the real step
handler routed as Step Functions would route it, not a run of the Step Functions engine, and a change of the
definition (a catcher, a retrier, a new state) reaches the exploration without anyone writing it out.

Retries: Step Functions uses the first retrier whose ``ErrorEquals`` names the error (or ``States.ALL``),
each retrier counting its own attempts
(https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html). A crashed invocation
reaches Step Functions as ``Sandbox.Timedout`` once the function's timeout passed
(https://docs.aws.amazon.com/step-functions/latest/dg/bp-lambda-serviceexception.html).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lambda_resilience.tracing import EXECUTION_INPUT

ALL = "States.ALL"
#: The synthesized definition (see the module doc).
ASL = Path(__file__).with_name("saga.asl.json")
#: Terminal pseudo-states of an execution.
SUCCEEDED, FAILED = "SUCCEEDED", "FAILED"
#: ``...:function:ReserveInventoryFunctionD7C0970A`` -> ``ReserveInventory`` (CDK's logical ID: the construct
#: ID, then an 8-character hash).
_FUNCTION = re.compile(r":function:(?P<name>[A-Za-z0-9]+?)Function[0-9A-F]{8}$")


@dataclass(frozen=True)
class Spec:
    """One Task state: the function it invokes (None: a direct service integration), its kind, where
    success goes, its catchers in order (errors -> next state) and its retriers (errors, MaxAttempts)."""

    function: str | None
    ok: str
    catches: tuple[tuple[frozenset[str], str], ...]
    retriers: tuple[tuple[frozenset[str], int], ...] = ()
    kind: str = "forward"

    def route(self, error: str) -> str:
        for errors, target in self.catches:
            if error in errors or ALL in errors:
                return target
        raise AssertionError(f"no catch for {error}")

    def retrier(self, error: str) -> int | None:
        """The index of the retrier Step Functions uses for ``error`` (None: not retried)."""
        for index, (errors, _) in enumerate(self.retriers):
            if error in errors or ALL in errors:
                return index
        return None


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _target(states: dict[str, Any], name: str) -> str:
    """A state to move to, or the execution's end when it is a Fail or Succeed state."""
    kind = states[name]["Type"]
    return FAILED if kind == "Fail" else SUCCEEDED if kind == "Succeed" else name


def _spec(states: dict[str, Any], state: dict[str, Any]) -> Spec:
    found = _FUNCTION.search(str(state.get("Resource", "")))
    function = _snake(found["name"]) if found else None
    retriers = tuple((frozenset(r["ErrorEquals"]), int(r.get("MaxAttempts", 3))) for r in state.get("Retry", []))
    if function is None or function == "finalize_order":
        kind = "recorder"
    else:
        kind = "compensation" if any(ALL in errors for errors, _ in retriers) else "forward"
    return Spec(
        function=function,
        ok=_target(states, state["Next"]) if "Next" in state else SUCCEEDED,
        catches=tuple((frozenset(c["ErrorEquals"]), _target(states, c["Next"])) for c in state.get("Catch", [])),
        retriers=retriers,
        kind=kind,
    )


def _marks(states: dict[str, Any]) -> dict[str, tuple[str, tuple[str, ...]]]:
    """The outcome each direct DynamoDB write records, and from which statuses (its ``:to`` and ``:f<i>``)."""
    found = {}
    for name, state in states.items():
        if state["Type"] == "Task" and str(state.get("Resource", "")).endswith(":dynamodb:updateItem"):
            values = state["Parameters"]["ExpressionAttributeValues"]
            sources = tuple(v["S"] for k, v in sorted(values.items()) if re.fullmatch(r":f\d+", k))
            found[name] = (values[":to"]["S"], sources)
    return found


def load(path: Path = ASL) -> tuple[str, dict[str, Spec], dict[str, tuple[str, tuple[str, ...]]]]:
    """The definition's start state, its Task states as :class:`Spec`, and its outcome writes."""
    definition = json.loads(path.read_text())
    states: dict[str, Any] = definition["States"]
    tasks = {name: _spec(states, state) for name, state in states.items() if state["Type"] == "Task"}
    return str(definition["StartAt"]), tasks, _marks(states)


START, STATES, MARKS = load()


@dataclass
class Execution:
    """One saga execution as the model runs it: where it is, how many retries its state used."""

    name: str
    order_id: str
    attempt: int
    correlation_id: str
    compensate: bool = False
    state: str = START
    #: Attempts retried so far in the current state, per retrier (Step Functions counts each on its own).
    retries: dict[int, int] = field(default_factory=dict)
    status: str = "RUNNING"
    error: dict[str, Any] | None = None
    started_at: float = 0.0
    history: list[str] = field(default_factory=list)
    #: The order's status and payment attempt when the execution closed (what it left: ``announced`` judges a
    #: SUCCEEDED execution by it, not by a later move such as a provider's late change parking the order).
    left: tuple[str, int] | None = None

    @property
    def running(self) -> bool:
        return self.status == "RUNNING"

    @property
    def spec(self) -> Spec:
        return STATES[self.state]

    def execution_input(self) -> dict[str, Any]:
        given: dict[str, Any] = {
            "order_id": self.order_id,
            "payment_attempt": self.attempt,
            "correlation_id": self.correlation_id,
        }
        if self.compensate:
            given["compensate"] = True
        return given

    def event(self) -> dict[str, Any]:
        """The Task's payload, as the definition builds it (the state; the final release's and the
        park's payloads name their fields)."""
        given = self.execution_input()
        if self.state == "ReleaseInventory":
            return {**given, EXECUTION_INPUT: given, "record_outcome": "COMPENSATED"}
        if self.state == "MarkNeedsAttention":
            return {
                "outcome": "NEEDS_ATTENTION",
                **given,
                "execution_name": self.name,
                EXECUTION_INPUT: given,
                "error": self.error or {"Error": "unknown", "Cause": ""},
            }
        return given

    def succeeded(self) -> None:
        self.history.append(f"{self.state}:ok")
        self.state, self.retries = self.spec.ok, {}

    def failed(self, error: str, cause: str) -> None:
        """The invocation failed with ``error``: retried while its retrier allows, else caught."""
        self.history.append(f"{self.state}:{error}")
        spec = self.spec
        index = spec.retrier(error)
        if index is not None and self.retries.get(index, 0) < spec.retriers[index][1]:
            self.retries[index] = self.retries.get(index, 0) + 1
            return
        self.state, self.retries = spec.route(error), {}
        if self.state not in (SUCCEEDED, FAILED):
            self.error = {"Error": error, "Cause": cause[:256]}

    def exhaust(self) -> None:
        """The next failure is the last the retry policy allows (an outage that outlasts the retries)."""
        self.retries = {index: attempts for index, (_, attempts) in enumerate(self.spec.retriers)}

    def ended(self) -> bool:
        if self.state in (SUCCEEDED, FAILED):
            self.status = self.state
            return True
        return False
