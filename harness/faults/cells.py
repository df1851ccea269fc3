"""The fault matrix's cells, generated from the state machine definition, and how an order's end is judged.

Pure functions over the ASL definition and over facts read from the tables, the sandbox ledger, the
needs-attention queue and the alarms: no moto here, so :mod:`tests.ops.test_fault_cells` tests them
directly. The injection is :mod:`harness.faults.inject`; the run is :mod:`harness.matrix.fault_matrix`.

Fault names are the ones Step Functions reports for each integration:

- Lambda tasks: https://docs.aws.amazon.com/step-functions/latest/dg/bp-lambda-serviceexception.html
  (``Lambda.ServiceException``, ``Lambda.TooManyRequestsException``, ``Lambda.Unknown``) and
  https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html
  (``Sandbox.Timedout``, ``States.Timeout``, ``States.Runtime``); the function's own errors are the
  names its Retry and Catch declare plus the middleware's (``TransientStepError``,
  ``UnknownStepError``, ``PayloadMismatch``).
- DynamoDB integrations (``DynamoDB.<exception>``):
  https://docs.aws.amazon.com/step-functions/latest/dg/connect-ddb.html and the DynamoDB error codes,
  https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Programming.Errors.html
  (a KMS key the table cannot use surfaces as ``DynamoDB.AmazonDynamoDBException``, the name Step
  Functions gives a DynamoDB error it has no class for).
- SQS integrations (``SQS.<exception>``), the SendMessage errors:
  https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from harness.faults.judge import Effects as Effects
from harness.faults.judge import OrderFacts as OrderFacts
from harness.faults.judge import classify as classify
from harness.faults.judge import facts_from_records as facts_from_records

Integration = Literal["lambda", "dynamodb", "sqs", "other"]
Persistence = Literal["once", "retries", "forever"]
PERSISTENCES: tuple[Persistence, ...] = ("once", "retries", "forever")
#: When an injected error hits: before the task acted, or after it acted and the answer was lost.
Timing = Literal["before", "after"]

LAMBDA_SERVICE_FAULTS = (
    "Lambda.ServiceException",
    "Lambda.TooManyRequestsException",
    "Lambda.Unknown",
    "Sandbox.Timedout",
)
#: The step middleware's own classification (lambda_resilience.step): retried transient / unknown outcome,
#: and the idempotency layer's refusal of a repeated key with another payload (permanent).
STEP_FAULTS = ("TransientStepError", "UnknownStepError", "PayloadMismatch")
STATES_FAULTS = ("States.Timeout", "States.Runtime")
DYNAMODB_FAULTS = (
    "DynamoDB.ProvisionedThroughputExceededException",
    "DynamoDB.ThrottlingException",
    "DynamoDB.RequestLimitExceeded",
    "DynamoDB.InternalServerErrorException",
    "DynamoDB.TransactionConflictException",
    "DynamoDB.ValidationException",
    "DynamoDB.AccessDeniedException",
    "DynamoDB.AmazonDynamoDBException",  # e.g. KMS: the table's key is disabled or not granted
)
SQS_FAULTS = (
    "SQS.RequestThrottled",
    "SQS.KmsAccessDenied",
    "SQS.KmsThrottled",
    "SQS.InvalidMessageContents",
    "SQS.QueueDoesNotExist",
    "SQS.AmazonSQSException",
)
#: Errors that may arrive after the task acted (its effect happened, the answer was lost).
AFTER_ACTING = frozenset(
    {
        "Lambda.Unknown",
        "Sandbox.Timedout",
        "States.Timeout",
        "UnknownStepError",
        "DynamoDB.InternalServerErrorException",
    }
)
#: Errors a step raises when its effect is done and its own outcome write failed (decision 0024): never
#: injected as such; a cell fails the step's outcome write (``outcome_write`` rules) after the effect.
EFFECT_DONE_ERRORS = frozenset({"EffectDoneOutcomeNotWritten"})
#: How a step's own outcome write fails: DynamoDB's answer once botocore gave up, or ``crash``: the
#: function dies between its effect and the write (Sandbox.Timedout: retried with the provider's key).
OUTCOME_WRITE_FAULTS = ("ThrottlingException", "InternalServerError", "ConditionalCheckFailedException", "crash")
#: The outcome write a route fails to reach the recorder behind an ``EFFECT_DONE_ERRORS`` catch.
ROUTE_OUTCOME_WRITE = "ThrottlingException"

#: The error a route injects to take a Catch whose names are all ``States.*``: only a wildcard catches it.
ROUTE_ERROR = "FaultMatrix.Route"

#: Provider actions whose answer can be lost after acting, and the states that call them.
AMBIGUOUS_ACTIONS = {
    "charge": "ChargePayment",
    "refund": "RefundPayment",
    "ship": "ShipOrder",
    "cancel": "CancelShipment",
}
AMBIGUOUS_KINDS = ("read_timeout", "connection_reset")
AMBIGUOUS_PERSISTENCES: tuple[Persistence, ...] = ("once", "forever")
REPAIR_ACTIONS = ("redrive", "compensate")

#: Outcomes a cell may end in; anything else is a violation.
GOOD_OUTCOMES = ("COMPLETED", "COMPENSATED", "NEEDS_ATTENTION", "REFUSED")


@dataclass(frozen=True)
class TaskState:
    """One Task state of the definition."""

    name: str
    integration: Integration
    resource: str
    next: str | None
    retry: tuple[tuple[tuple[str, ...], int], ...]  # (ErrorEquals, MaxAttempts)
    catch: tuple[tuple[tuple[str, ...], str], ...]  # (ErrorEquals, Next)

    def retries_for(self, error: str) -> int:
        """MaxAttempts of the first retrier matching ``error`` (0: not retried)."""
        for names, attempts in self.retry:
            if error in names or ("States.ALL" in names and not _uncatchable(error)):
                return attempts
        return 0

    def catcher_for(self, error: str) -> str | None:
        for names, target in self.catch:
            if error in names or ("States.ALL" in names and not _uncatchable(error)):
                return target
        return None

    def business_errors(self) -> list[str]:
        """Names the state's Retry and Catch declare that are not service or ``States.`` names (nor
        :data:`EFFECT_DONE_ERRORS`: those are reached by failing the step's outcome write)."""
        names = [n for group, _ in (*self.retry, *self.catch) for n in group]
        out = []
        for n in names:
            if n.startswith(("States.", "Lambda.", "Sandbox.", "DynamoDB.", "SQS.")) or n in out:
                continue
            if n in EFFECT_DONE_ERRORS:
                continue
            out.append(n)
        return out

    def records_outcome(self) -> bool:
        """Whether the step writes the outcome itself (a Catch of :data:`EFFECT_DONE_ERRORS`)."""
        return any(n in EFFECT_DONE_ERRORS for group, _ in self.catch for n in group)


def _uncatchable(error: str) -> bool:
    """``States.ALL`` matches neither of these (concepts-error-handling.html, States.ALL)."""
    return error in ("States.Runtime", "States.DataLimitExceeded")


def integration_of(resource: str) -> Integration:
    if resource.startswith("arn:aws:lambda:") or resource.startswith("arn:aws:states:::lambda:invoke"):
        return "lambda"
    if resource.startswith("arn:aws:states:::dynamodb:"):
        return "dynamodb"
    if resource.startswith("arn:aws:states:::sqs:"):
        return "sqs"
    return "other"


def task_states(definition: Mapping[str, Any]) -> dict[str, TaskState]:
    """Every Task state of ``definition`` (the ASL as a dict), by name, in definition order."""
    out = {}
    for name, state in definition["States"].items():
        if state.get("Type") != "Task":
            continue
        resource = str(state.get("Resource", ""))
        out[name] = TaskState(
            name=name,
            integration=integration_of(resource),
            resource=resource,
            next=state.get("Next"),
            retry=tuple((tuple(r["ErrorEquals"]), int(r.get("MaxAttempts", 3))) for r in state.get("Retry", [])),
            catch=tuple((tuple(c["ErrorEquals"]), str(c["Next"])) for c in state.get("Catch", [])),
        )
    return out


def faults_for(state: TaskState) -> list[str]:
    """The faults AWS documents for the state's integration (plus the step's own errors for Lambda)."""
    if state.integration == "lambda":
        return [*state.business_errors(), *(f for f in STEP_FAULTS if f not in state.business_errors()),
                *LAMBDA_SERVICE_FAULTS, *STATES_FAULTS]  # fmt: skip
    if state.integration == "dynamodb":
        return [*DYNAMODB_FAULTS, *STATES_FAULTS]
    if state.integration == "sqs":
        return [*SQS_FAULTS, *STATES_FAULTS]
    return list(STATES_FAULTS)


@dataclass(frozen=True)
class Rule:
    """One injection for one order: at ``state``, do ``kind`` on the attempts ``persistence`` says.

    kind: ``error`` (the task fails with ``error``), ``crash`` (the function dies after its side
    effect, before its idempotency record completes), ``stop`` (StopExecution), ``timeout`` (the
    execution times out), ``ambiguous`` (the provider's answer for ``action`` is lost after it acted:
    ``error`` is the transport kind), ``race`` (run the actor ``error`` inside the state, ``timing``
    before or after it acted, variant ``action``), ``duplicate`` (a second live invocation of the step,
    variant ``action``), ``inflight`` (the provider keeps ``action``'s first request in flight and
    answers its retries 409): :mod:`harness.matrix.actors`; ``outcome_write`` (the step's own outcome
    write fails with the DynamoDB code ``error``, or the function dies there: ``crash``).
    ``first_execution_only``: a stop, a timeout, or a setup a repair comes after (the outage is over).
    """

    state: str
    kind: Literal["error", "crash", "stop", "timeout", "ambiguous", "race", "duplicate", "inflight", "outcome_write"]
    error: str = ""
    persistence: Persistence = "forever"
    count: int = 0  # attempts that fail: 1 (once), the retrier's MaxAttempts (retries), or 0 (forever)
    timing: Timing = "before"
    action: str = ""
    first_execution_only: bool = False

    def fails(self, attempt: int) -> bool:
        """Whether the ``attempt``-th time (1-based) the rule is consulted it fires."""
        return self.count == 0 or attempt <= self.count


@dataclass(frozen=True)
class Cell:
    """One cell: a row (a state, or ``repair@<setup>``), a column (the fault), a persistence, its rules."""

    row: str
    fault: str
    persistence: str
    rules: tuple[Rule, ...]
    repair: str = ""  # the ops repair action to run once the first execution has ended
    setup: str = ""  # repair cells: what brought the order where the repair finds it
    #: Once the first execution ended, before the repairs (harness.matrix.races): ``attempt2``,
    #: ``forget-keys``, ``expire-records``, ``expire-both``.
    after_drain: str = ""
    #: A repair racing the sweeper: ``sweep-inside-repair`` or ``repair-inside-sweep``.
    race: str = ""

    @property
    def key(self) -> str:
        return f"{self.row}|{self.fault}|{self.persistence}"


def route_to(states: Mapping[str, TaskState], start: str, target: str) -> list[Rule] | None:
    """The injections that take an execution from ``start`` to ``target`` (None: unreachable).

    Edges: a task's ``Next`` (the step succeeds) and each Catch (one injected error the catcher
    matches and no earlier catcher does, for good, before the task acts). Of all simple paths, the
    one with the fewest injections, then the most steps that really ran (so a compensation has
    something to undo: a refund follows a real charge).
    """
    best: tuple[tuple[int, int], list[Rule]] | None = None

    def walk(name: str, seen: frozenset[str], rules: tuple[Rule, ...], ran: int) -> None:
        nonlocal best
        if name == target:
            score = (len(rules), -ran)
            if best is None or score < best[0]:
                best = (score, list(rules))
            return
        state = states.get(name)
        if state is None or (best is not None and len(rules) > best[0][0]):
            return
        if state.next and state.next not in seen:
            walk(state.next, seen | {state.next}, rules, ran + 1)
        for names, nxt in state.catch:
            error = next((n for n in names if not n.startswith("States.")), ROUTE_ERROR)
            if state.catcher_for(error) == nxt and nxt not in seen:
                rule = Rule(state=name, kind="error", error=error)
                if error in EFFECT_DONE_ERRORS:  # the step acted; its own outcome write fails for good
                    rule = Rule(state=name, kind="outcome_write", error=ROUTE_OUTCOME_WRITE)
                walk(nxt, seen | {nxt}, (*rules, rule), ran + (error in EFFECT_DONE_ERRORS))

    walk(start, frozenset({start}), (), 0)
    return None if best is None else best[1]


def _persisted(state: TaskState, error: str) -> list[tuple[Persistence, int]]:
    """(persistence, failing attempts) for ``error`` at ``state``: ``retries`` only when a retrier takes it."""
    out: list[tuple[Persistence, int]] = [("once", 1)]
    retries = state.retries_for(error)
    if retries:
        out.append(("retries", retries))
    out.append(("forever", 0))
    return out


def generate_cells(definition: Mapping[str, Any]) -> list[Cell]:
    """Every cell of the matrix for ``definition``."""
    states = task_states(definition)
    start = str(definition["StartAt"])
    cells: list[Cell] = []
    routes = {name: route_to(states, start, name) for name in states}
    for name, state in states.items():
        route = routes[name]
        if route is None:
            continue
        for fault in faults_for(state):
            timing: Timing = "after" if fault in AFTER_ACTING else "before"
            for persistence, count in _persisted(state, fault):
                rule = Rule(name, "error", fault, persistence, count, timing)
                cells.append(Cell(name, fault, persistence, (*route, rule)))
        if state.integration == "lambda":
            for persistence, count in _persisted(state, "Sandbox.Timedout"):
                rule = Rule(name, "crash", "Sandbox.Timedout", persistence, count)
                cells.append(Cell(name, "crash-before-marker", persistence, (*route, rule)))
        if state.records_outcome():  # the effect done, its outcome write failing (decision 0024)
            for fault in OUTCOME_WRITE_FAULTS:
                for persistence, count in (("once", 1), ("forever", 0)):
                    rule = Rule(name, "outcome_write", fault, persistence, count)
                    cells.append(Cell(name, f"outcome-write-{fault}", persistence, (*route, rule)))
        cells.append(Cell(name, "StopExecution", "once", (*route, Rule(name, "stop", first_execution_only=True))))
        cells.append(
            Cell(name, "execution-timeout", "once", (*route, Rule(name, "timeout", first_execution_only=True)))
        )
    for action, state_name in AMBIGUOUS_ACTIONS.items():
        route = routes.get(state_name)
        if route is None:
            continue
        if action == "cancel":  # something to cancel: the ship acted and its answer was lost for good
            route = [*(routes.get(AMBIGUOUS_ACTIONS["ship"]) or []),
                     Rule(AMBIGUOUS_ACTIONS["ship"], "ambiguous", "read_timeout", action="ship")]  # fmt: skip
        for kind in AMBIGUOUS_KINDS:
            for persistence in AMBIGUOUS_PERSISTENCES:
                count = 1 if persistence == "once" else 0
                rule = Rule(state_name, "ambiguous", kind, persistence, count, action=action)
                cells.append(Cell(state_name, f"ambiguous-{action}-{kind}", persistence, (*route, rule)))
    cells.extend(repair_cells(states, start, routes))
    return cells


def repair_cells(states: Mapping[str, TaskState], start: str, routes: Mapping[str, list[Rule] | None]) -> list[Cell]:
    """``ops repair`` with each action after each setup that leaves an order somewhere distinct:
    completed, compensated, parked (routes to the recorders of those outcomes), and a stop in each state."""
    setups: list[tuple[str, tuple[Rule, ...]]] = [("completed", ())]
    for label, needle in (("compensated", "Compensated"), ("parked", "NeedsAttention")):
        name = next((n for n in states if needle in n and routes.get(n)), None)
        if name is not None:
            setups.append((label, tuple(first_only(r) for r in routes[name] or ())))
    for name, route in routes.items():
        if route is not None:
            setups.append(
                (f"stop@{name}", (*(first_only(r) for r in route), Rule(name, "stop", first_execution_only=True)))
            )
    return [
        Cell(f"repair@{setup}", action, "once", rules, repair=action, setup=setup)
        for setup, rules in setups
        for action in REPAIR_ACTIONS
    ]


def first_only(rule: Rule) -> Rule:
    """The same rule, holding only in the first execution (a repair comes after the outage)."""
    return Rule(rule.state, rule.kind, rule.error, rule.persistence, rule.count, rule.timing, rule.action, True)


# -- classification (harness.faults.judge; re-exported here for its callers) ---------------------

# -- the matrix ------------------------------------------------------------------------------------


def matrix_rows(results: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, dict[str, int]]]:
    """``{row: {column: {outcome: count}}}``; a column is the fault plus its persistence."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for r in results:
        column = (
            r["fault"]
            if r["persistence"] == "once" and r["row"].startswith("repair@")
            else (f"{r['fault']}/{r['persistence']}")
        )
        cell = out.setdefault(r["row"], {}).setdefault(column, {})
        cell[r["outcome"]] = cell.get(r["outcome"], 0) + 1
    return out


SHORT = {"COMPLETED": "C", "COMPENSATED": "X", "NEEDS_ATTENTION": "NA", "REFUSED": "R", "VIOLATION": "VIOL"}


def render(results: Sequence[Mapping[str, Any]]) -> str:
    """The matrix as text: for each row, its cells ``fault/persistence=outcome``, then the totals."""
    lines = []
    for row, columns in matrix_rows(results).items():
        lines.append(f"{row}:")
        for column, outcomes in columns.items():
            text = " ".join(f"{SHORT.get(o, o)}x{n}" if n > 1 else SHORT.get(o, o) for o, n in sorted(outcomes.items()))
            lines.append(f"  {column:<62} {text}")
    totals: dict[str, int] = {}
    for r in results:
        totals[r["outcome"]] = totals.get(r["outcome"], 0) + 1
    lines.append(
        f"{len(results)} cells: "
        + ", ".join(f"{o} {n}" for o, n in sorted(totals.items()))
        + "   (C = COMPLETED, X = COMPENSATED, NA = NEEDS_ATTENTION announced, R = repair refused, order left as it"
        " was, VIOL = violation)"
    )
    violations = [r for r in results if r["outcome"] == "VIOLATION"]
    for r in violations:
        lines.append(
            f"VIOLATION {r['row']} {r['fault']}/{r['persistence']} ({r['order_id']}): {'; '.join(r['problems'])}"
        )
    return "\n".join(lines)
