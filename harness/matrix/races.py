"""The fault matrix's concurrency and time cells (issue 28): generated from the definition like the
others (:func:`harness.faults.cells.generate_cells`), run by :mod:`harness.matrix.actors` inside live
executions, and by :mod:`harness.matrix.fault_matrix` between its phases.

Rows:

- ``<State>`` with ``sweeper-during-execution`` (``listed`` / ``lagging``): the sweeper runs inside the
  state after it acted, the order aged past the stuck threshold; ``lagging``: the execution is not yet
  in ListExecutions. ``duplicate-invocation`` (``first-answer`` / ``outlives-retries``): a second live
  invocation of the step. ``dlq-replay-during-saga``: the order's message comes back (as
  ``ops dlq replay`` puts it back) while the state runs. ``attempt-2-during-compensation``: payment
  attempt N+1 arrives while attempt N compensates. ``in-flight-409-<action>`` (``once`` /
  ``forever``): the provider is still processing the first request when the retry arrives.
- ``attempt2@<outcome>``: payment attempt 2 once attempt 1 ended COMPLETED, COMPENSATED (money moved
  and went back), declined, or parked.
- ``time@<setup>``: a repair after the provider forgot the order's keys (its window passed), a redrive
  after our own idempotency records expired, and after both.
- ``race@<setup>``: ``ops repair`` racing the sweeper, each inside the other, ListExecutions lagging.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.faults.cells import (
    AMBIGUOUS_ACTIONS,
    REPAIR_ACTIONS,
    Cell,
    Persistence,
    Rule,
    TaskState,
    first_only,
    generate_cells,
    route_to,
    task_states,
)

#: The compensation states (attempt N+1 arrives while one of them runs).
COMPENSATIONS = ("RefundPayment", "CancelShipment", "ReleaseInventory")
DUPLICATE_VARIANTS = ("first-answer", "outlives-retries")
SWEEP_VARIANTS = ("listed", "lagging")
INFLIGHT_PERSISTENCES: tuple[Persistence, ...] = ("once", "forever")
#: What the cell does once the first execution ended, before ``ops repair``.
TIME_SETUPS = {
    "key-expired-before-repair": ("forget-keys", REPAIR_ACTIONS),
    "record-expired-before-redrive": ("expire-records", ("redrive",)),
    "record-and-key-expired-before-redrive": ("expire-both", ("redrive",)),
}
REPAIR_RACES = ("sweep-inside-repair", "repair-inside-sweep")


def all_cells(definition: Mapping[str, Any]) -> list[Cell]:
    """The whole matrix: :func:`~harness.faults.cells.generate_cells` and the cells of this module."""
    states = task_states(definition)
    start = str(definition["StartAt"])
    routes = {name: route_to(states, start, name) for name in states}
    return [*generate_cells(definition), *race_cells(states, routes)]


def race_cells(states: Mapping[str, TaskState], routes: Mapping[str, list[Rule] | None]) -> list[Cell]:
    """Every concurrency and time cell for the definition's states (see the module docstring)."""
    cells: list[Cell] = []
    for name, state in states.items():
        route = routes.get(name)
        if route is None or state.integration != "lambda":
            continue
        for variant in SWEEP_VARIANTS:
            rule = Rule(name, "race", "sweep", "once", 1, "after", variant, True)
            cells.append(Cell(name, "sweeper-during-execution", variant, (*route, rule)))
        for variant in DUPLICATE_VARIANTS:
            rule = Rule(name, "duplicate", "", "once", 1, action=variant, first_execution_only=True)
            cells.append(Cell(name, "duplicate-invocation", variant, (*route, rule)))
        replay = Rule(name, "race", "replay", "once", 1, "before", first_execution_only=True)
        cells.append(Cell(name, "dlq-replay-during-saga", "once", (*route, replay)))
        if name in COMPENSATIONS:  # attempt 1 compensates (its outage over for attempt 2)
            rule = Rule(name, "race", "attempt2", "once", 1, "before", first_execution_only=True)
            first = tuple(first_only(r) for r in route)
            cells.append(Cell(name, "attempt-2-during-compensation", "once", (*first, rule)))
    for action, state_name in AMBIGUOUS_ACTIONS.items():
        route = routes.get(state_name)
        if route is None:
            continue
        if action == "cancel":  # something to cancel: the ship acted and its answer was lost
            ship = AMBIGUOUS_ACTIONS["ship"]
            route = [*(routes.get(ship) or []), Rule(ship, "ambiguous", "read_timeout", action="ship")]
        for persistence in INFLIGHT_PERSISTENCES:
            rule = Rule(state_name, "inflight", "409", persistence, 1, action=action, first_execution_only=True)
            cells.append(Cell(state_name, f"in-flight-409-{action}", persistence, (*route, rule)))
    cells.extend(_after_drain_cells(states, routes))
    return cells


def _setups(states: Mapping[str, TaskState], routes: Mapping[str, list[Rule] | None]) -> dict[str, tuple[Rule, ...]]:
    """Where attempt 1 ends: COMPLETED, COMPENSATED after a capture, declined, parked; stopped after a
    charge (``stop@ChargePayment``) or a shipment (``stop@ShipOrder``)."""
    out: dict[str, tuple[Rule, ...]] = {"completed": ()}
    for label, needle in (("compensated", "Compensated"), ("parked", "NeedsAttention")):
        name = next((n for n in states if needle in n and routes.get(n)), None)
        if name is not None:
            out[label] = tuple(first_only(r) for r in routes[name] or ())
    charge = routes.get("ChargePayment")
    if charge is not None and "PaymentDeclined" in states["ChargePayment"].business_errors():
        declined = Rule("ChargePayment", "error", "PaymentDeclined", first_execution_only=True)
        out["declined"] = (*(first_only(r) for r in charge), declined)
    for name in ("ChargePayment", "ShipOrder"):
        if routes.get(name) is not None:
            stop = Rule(name, "stop", first_execution_only=True)
            out[f"stop@{name}"] = (*(first_only(r) for r in routes[name] or ()), stop)
    return out


def _after_drain_cells(states: Mapping[str, TaskState], routes: Mapping[str, list[Rule] | None]) -> list[Cell]:
    setups = _setups(states, routes)
    cells = [
        Cell(f"attempt2@{label}", "payment-attempt-2", "once", rules, setup=label, after_drain="attempt2")
        for label, rules in setups.items()
        if not label.startswith("stop@")
    ]
    # The order stopped mid-way with the most effects out. Since decision 0024 ShipOrder records COMPLETED
    # itself, so a stop after it finds nothing to redrive: the last mid-way order is charged, not shipped.
    where = (
        "stop@ChargePayment" if "ShipOrder" in states and states["ShipOrder"].records_outcome() else "stop@ShipOrder"
    )
    shipped = setups.get(where)
    if shipped is not None:
        for label, (after, actions) in TIME_SETUPS.items():
            for action in actions:
                cell = Cell(f"time@{label}", action, "once", shipped, action, where, after)
                cells.append(cell)
    for setup in ("stop@ChargePayment", "stop@ShipOrder"):
        rules = setups.get(setup)
        if rules is None:
            continue
        for race in REPAIR_RACES:
            for action in REPAIR_ACTIONS:
                cells.append(
                    Cell(f"race@{setup}", f"{race}-{action}", "lagging", rules, repair=action, setup=setup, race=race)
                )
    return cells
