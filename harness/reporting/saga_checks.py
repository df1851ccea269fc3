"""Two of the chaos run's checks on the saga's ends, read from the execution histories and the ledger.

- Every FAILED execution was parked (it left the park or the last-resort state: the order is on
  the needs-attention queue) or refused its input (it ended in the refusal state): no execution
  fails without a word.
- No terminal order's side effects disagree with its status: COMPLETED with exactly one capture,
  no refund and one live shipment; COMPENSATED with the money back, no live shipment and the
  stock released (:func:`harness.faults.cells.classify`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from harness.faults.cells import classify, facts_from_records

#: States whose successful exit means the order was announced on the needs-attention queue.
PARK_MARKERS = ("NeedsAttention", "LastResort")
#: Fail states that end an execution which did nothing: it refused its input, or met an order already parked
#: and announced that nobody asked it to act on (a Redrive after the sweeper's park: decision 0029).
REFUSAL_STATES = ("InputRefused", "AlreadyParked")


def failed_executions(histories: Iterable[tuple[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    """FAILED executions, how many were parked or refused, and examples of the others."""
    failed = parked = refused = 0
    unexplained: list[str] = []
    for arn, events in histories:
        if not any(e.get("type") == "ExecutionFailed" for e in events):
            continue
        failed += 1
        exited = [e["stateExitedEventDetails"]["name"] for e in events if "stateExitedEventDetails" in e]
        entered = [e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e]
        if any(marker in name for name in exited for marker in PARK_MARKERS):
            parked += 1
        elif entered and entered[-1] in REFUSAL_STATES:
            refused += 1
        else:
            state = entered[-1] if entered else "-"
            unexplained.append(f"{arn.rsplit(':', 1)[-1]} (failed in {state}{_error(events)})")
    return {"failed": failed, "parked": parked, "refused": refused, "unexplained": unexplained}


def _error(events: list[dict[str, Any]]) -> str:
    """``: <error>`` of the execution's failure, if its history names one (never the cause: it may quote
    the state's input)."""
    for event in events:
        error = event.get("executionFailedEventDetails", {}).get("error")
        if error:
            return f": {error}"
    return ""


def status_disagreements(
    statuses: Mapping[str, Mapping[str, Any]],
    ledger: Iterable[Mapping[str, Any]],
    inventory: Iterable[Mapping[str, Any]],
) -> list[str]:
    """``order: why`` for each COMPLETED or COMPENSATED order whose ledger and reservations disagree."""
    terminal = [oid for oid, item in statuses.items() if item.get("status") in ("COMPLETED", "COMPENSATED")]
    out = []
    for oid, facts in facts_from_records(terminal, statuses, ledger, inventory).items():
        outcome, problems = classify(facts)
        if outcome == "VIOLATION":
            out.append(f"{oid}: {'; '.join(problems)}")
    return sorted(out)
