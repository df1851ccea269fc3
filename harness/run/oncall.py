"""The on-call's answer to parked orders at the end of a local run (``--repair-parked``).

The needs-attention runbook (docs/runbooks/needs-attention.md) says: list the parked orders
(``ops orders --status NEEDS_ATTENTION``), fix the cause, then ``ops repair <order-id> --action redrive``
when no compensation ran; an order whose compensation ran is left for a person (``compensate`` once its
provider is fixed, or ``resolve``). This phase does exactly that with the product's own ``ops`` functions,
after the run's faults are over (the cause is fixed), records it as an ops command (a notification it
causes fails ``--check``), drains, and reports the valid orders lost before and after it: a sale a page and
a runbook step recover is not lost, and the figures show both.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from harness.reporting.lost_sales import lost_sales
from local_cloud.histories import execution_histories

#: At most this many parked orders are repaired per run (``ops orders`` pages are bounded; so is the on-call).
MAX_REPAIRS = 1000
#: The reason every redrive records on the order (``ops repair --reason``).
REASON = "local run: the on-call redrives a parked order after the run's faults (runbook needs-attention)"


def _lost(run: Any, details: list[dict[str, Any]]) -> dict[str, Any]:
    """The valid orders lost in ``details`` (the run's order summary), by cause (no pages: the counts only)."""
    section = lost_sales(run.submitted, details, execution_histories(run.state_machine_arn), pages=[])
    return {k: section[k] for k in ("lost", "infrastructure", "operator")}


def repair_parked(run: Any) -> dict[str, Any]:
    """Redrive every parked order the runbook says to redrive, drain, and return what happened."""
    from ops.orders_list import orders_by_status
    from ops.repair import RepairRefused, repair

    before = _lost(run, run.order_summary()[1])
    target = run.target()
    parked = orders_by_status(target, "NEEDS_ATTENTION", max_items=MAX_REPAIRS, now=run.clock.now())
    redriven: list[str] = []
    refused: Counter[str] = Counter()
    for order in parked:
        try:
            repair(target, str(order["order_id"]), "redrive", reason=REASON)
        except RepairRefused as refusal:
            refused[refusal.kind] += 1
            continue
        redriven.append(str(order["order_id"]))
    run.drain()
    details = run.order_summary()[1]  # one read of the orders after the repairs, for both figures below
    statuses = {d["order_id"]: d["status"] for d in details}
    outcomes = Counter(str(statuses.get(order_id)) for order_id in redriven)
    return {
        "parked": len(parked),
        "redriven": len(redriven),
        "completed": outcomes["COMPLETED"],
        "redriven_ended": dict(outcomes),  # a redriven order the business refuses still compensates
        "refused": dict(refused),
        "lost_before": before,
        "lost_after": _lost(run, details),
    }


def repair_parked_as_operator(run: Any, report: dict[str, Any]) -> dict[str, Any]:
    """:func:`repair_parked`, recorded in ``report["ops_commands"]`` with its simulated span."""
    started = run.clock.now()
    section = repair_parked(run)
    run.evaluate_alarms()  # what the repairs did is read at the next evaluation
    report["ops_commands"].append(
        {"command": "repair --action redrive", "started_at": started, "ended_at": run.clock.now()}
    )
    return section


def oncall_line(section: dict[str, Any]) -> str:
    """``on-call: N parked, R redriven (C completed) ...; lost sales before A, after B``."""
    refused = ", ".join(f"{n} refused: {why}" for why, n in sorted(section["refused"].items()))
    before, after = section["lost_before"], section["lost_after"]
    return (
        f"on-call (ops repair --action redrive, runbook needs-attention): {section['parked']} parked, "
        f"{section['redriven']} redriven ("
        + ", ".join(f"{n} {status}" for status, n in sorted(section["redriven_ended"].items()))
        + ")"
        + (f", {refused}" if refused else "")
        + f"; valid orders lost before the on-call {before['lost']} ({before['operator']} by an operator), "
        f"after {after['lost']}"
    )
