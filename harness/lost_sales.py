"""Lost sales: valid orders (good token, in stock, deliverable) that ended COMPENSATED or NEEDS_ATTENTION.

The harness generated every order, so it knows which ones were valid (:func:`harness.orders.order_kind`
is ``"ok"``): such an order has no business reason to be cancelled or parked. Each one is reported
with its cause, read from its executions' histories (the first task error, and the state it failed
in): an operator's repair that asked for the compensation (``CompensationRequested``) is the
operator's call; anything else is our own infrastructure (a throttle, a crash, a timeout, one of our
quotas) or unexplained, and is a violation unless somebody was paged in the run (a delivered page of a
kind that can announce a lost order: :data:`ANNOUNCING_KINDS`). The page is the run's, not the order's: an
alarm says that something is wrong, never which order it cost.

The histories are read, never their causes: a cause may quote a state's input.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from harness.orders import order_kind
from local_cloud.histories import execution_histories

#: The invariant's name in the report's ``invariants``.
INVARIANT = "no_lost_sale_unless_paged"
#: Statuses that lose the sale.
LOST_STATUSES = ("COMPENSATED", "NEEDS_ATTENTION")
#: Errors that mean an operator asked for the compensation (``ops repair --action compensate``).
OPERATOR_ERRORS = ("CompensationRequested",)
#: Page kinds (harness.pager.alarm_kind) that can announce a lost order: a step's errors or throttles, the saga's
#: executions, parked or stuck orders, a provider outage. A DLQ, API or sweeper page announces something else.
ANNOUNCING_KINDS = (
    "function",
    "function_throttled",
    "executions_failed",
    "executions_aborted",
    "executions_timed_out",
    "throttled",
    "needs_attention",
    "stuck",
    "provider_outage",
)
#: How many lost orders the report lists (the counts cover all of them).
LISTED = 50


def first_failure(events: Sequence[dict[str, Any]]) -> tuple[str | None, str | None]:
    """(error, state) of the first task error in an execution's history (None, None without one)."""
    state: str | None = None
    for event in events:
        entered = event.get("stateEnteredEventDetails")
        if entered:
            state = entered.get("name")
            continue
        for key, details in event.items():
            failed = key.endswith(("FailedEventDetails", "TimedOutEventDetails")) and isinstance(details, dict)
            if failed and details.get("error"):
                return str(details["error"]), state
    return None, None


def _order_failure(
    order_id: str, histories: Iterable[tuple[str, list[dict[str, Any]]]]
) -> tuple[str | None, str | None]:
    """The first task error of the order's executions (any attempt or repair, in history order)."""
    marker = f":order-{order_id}-attempt-"
    for arn, events in histories:
        if marker in arn:
            error, state = first_failure(events)
            if error:
                return error, state
    return None, None


def _cause(error: str | None) -> str:
    if error is None:
        return "unknown"
    return "operator" if error in OPERATOR_ERRORS else "infrastructure"


def consumer_alarms(alarms: Mapping[str, Mapping[str, Any]], consumers: Collection[str]) -> set[str]:
    """The alarms on a queue consumer's function (``FunctionName`` among ``consumers``, the functions of the
    SQS event source mappings): a throttled or failing consumer leaves its messages in the queue, which
    redelivers them, so its page announces no order the saga cancelled."""
    out = set()
    for name, alarm in alarms.items():
        metrics = [alarm, *(q["MetricStat"]["Metric"] for q in alarm.get("Metrics", []) if "MetricStat" in q)]
        functions = {d["Value"] for m in metrics for d in m.get("Dimensions", []) if d.get("Name") == "FunctionName"}
        if functions & set(consumers):
            out.add(name)
    return out


def lost_sales(
    submitted: Iterable[tuple[dict[str, Any], str | None]],
    details: Iterable[dict[str, Any]],
    histories: Sequence[tuple[str, list[dict[str, Any]]]],
    pages: Iterable[dict[str, Any]],
    ignored: Collection[str] = (),
) -> dict[str, Any]:
    """The report's ``lost_sales`` section: counts, the pages that announced them, and each lost order.
    ``ignored``: alarms whose page announces no lost order (:func:`consumer_alarms`)."""
    valid = {order["order_id"] for order, _ in submitted if order_kind(order) == "ok"}
    paged_by = sorted(
        {
            str(p["alarm"])
            for p in pages
            if p.get("delivered") and p.get("kind") in ANNOUNCING_KINDS and p["alarm"] not in ignored
        }
    )
    orders = []
    for detail in details:
        if detail["order_id"] not in valid or detail["status"] not in LOST_STATUSES:
            continue
        error, state = _order_failure(detail["order_id"], histories)
        cause = _cause(error)
        orders.append(
            {
                "order_id": detail["order_id"],
                "status": detail["status"],
                "cause": cause,
                "error": error,
                "state": state,
                "paged": bool(paged_by) and cause != "operator",
            }
        )
    ours = [o for o in orders if o["cause"] != "operator"]
    return {
        "valid": len(valid),
        "lost": len(orders),
        "infrastructure": sum(o["cause"] == "infrastructure" for o in orders),
        "unpaged": sum(not o["paged"] for o in ours),
        "paged_by": paged_by,
        "orders": orders[:LISTED],
    }


def unpaged_lost_sales(
    submitted: Iterable[tuple[dict[str, Any], str | None]], details: Iterable[dict[str, Any]], state_machine_arn: str
) -> dict[str, Any]:
    """The section for a run that evaluates no alarm (the spike): every lost sale is one nobody was paged for."""
    return lost_sales(submitted, details, execution_histories(state_machine_arn), pages=[])


def matrix_lost_sales(cells: Iterable[dict[str, Any]], in_alarm: Sequence[str]) -> dict[str, Any]:
    """The fault matrix's lost sales: every cell's order is valid and every injected fault is our infrastructure's,
    so each cell ending COMPENSATED or NEEDS_ATTENTION is one, counted by fault (reported; the matrix's verdict
    stays its judge's: the matrix evaluates its alarms once, at the end, for all cells together)."""
    rows = list(cells)
    lost = [c for c in rows if c.get("status") in LOST_STATUSES]
    by_fault: dict[str, int] = {}
    for cell in lost:
        by_fault[str(cell["fault"])] = by_fault.get(str(cell["fault"]), 0) + 1
    return {"valid": len(rows), "lost": len(lost), "by_fault": by_fault, "alarms_in_alarm": len(in_alarm)}


def check_lost_sales(report: dict[str, Any]) -> str | None:
    """None unless a valid order was lost to our own infrastructure (or to no known cause) and nobody was paged."""
    section = report.get("lost_sales")
    if not section or not section["unpaged"]:
        return None
    unpaged = [o for o in section["orders"] if not o["paged"] and o["cause"] != "operator"]
    examples = [
        f"{o['order_id']} {o['status']} ({o['error'] or 'no error in its history'} in {o['state']})"
        for o in unpaged[:3]
    ]
    return f"{section['unpaged']} valid orders lost and nobody paged; e.g. {examples}"
