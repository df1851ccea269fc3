"""Lost sales: valid orders (good token, in stock, deliverable) that ended COMPENSATED or NEEDS_ATTENTION.

The harness generated every order, so it knows which ones were valid (:func:`harness.workload.orders.order_kind`
is ``"ok"``): such an order has no business reason to be cancelled or parked. Each one is reported
with its cause, read from its executions' histories (the first task error, and the state it failed
in): an operator's repair that asked for the compensation (``CompensationRequested``) is the
operator's call; anything else is our own infrastructure (a throttle, a crash, a timeout, one of our
quotas) or unexplained, and is a violation unless a page named that order's incident (:func:`order_pages`):
a parked order by a park page after it was parked (or a park alarm still in ALARM, so its open incident
covers the new park); a compensated one by a page of its failing step's function (or of the saga's
executions) during the order's life. Another incident's page in the same run does not count.

The histories are read, never their causes: a cause may quote a state's input.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from harness.workload.orders import order_kind
from local_cloud.histories import execution_histories

#: The invariant's name in the report's ``invariants``.
INVARIANT = "no_lost_sale_unless_paged"
#: Statuses that lose the sale.
LOST_STATUSES = ("COMPENSATED", "NEEDS_ATTENTION")
#: An execution ends ABORTED only through StopExecution, an operator's (or a tool's) act
#: (https://docs.aws.amazon.com/step-functions/latest/apireference/API_StopExecution.html).
ABORTED = "ExecutionAborted"
#: Errors that mean an operator asked for the compensation (``ops repair --action compensate``), or stopped the
#: order's execution (:data:`ABORTED`).
OPERATOR_ERRORS = ("CompensationRequested", ABORTED)
#: A provider's or the stock's decision (lambdas/order_domain/errors.py, BusinessOutcome): never ours. A valid order
#: of a run never meets one; the fault matrix injects them on valid orders to reach the compensations.
#: ``FaultMatrix.Route`` (harness.faults.cells.ROUTE_ERROR) is the matrix's own lever to take a wildcard catch and
#: reach a compensation's cell: a cell's setup, injected like those outcomes, never a loss of ours.
BUSINESS_ERRORS = (
    "PaymentDeclined",
    "PaymentIncomplete",
    "ShippingUnavailable",
    "InsufficientStock",
    "InvalidOrder",
    "FaultMatrix.Route",
)
#: Another actor (a newer payment attempt, an operator's repair, the sweeper) moved the order under this execution,
#: whose compensations then undo its own attempt only (decision 0028): that actor's act decides the order, and is
#: judged as such. The fault matrix injects them on valid orders to reach the compensations (decision 0034).
ANOTHER_ACTOR_ERRORS = ("StaleAttempt", "OrderMovedOn", "InvalidTransition")
#: Page kinds (harness.reporting.pager.alarm_kind) that can announce a lost order: a step's errors or throttles, the
#: saga's executions, parked or stuck orders, a provider outage. A DLQ, API or sweeper page announces something else.
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
#: Causes that are ours (a violation unless paged): our infrastructure, or nothing in the order's histories.
OURS = ("infrastructure", "unknown")
#: Page kinds that announce a parked order (the park's alarms, the sweeper's stuck orders, a failed execution).
PARK_KINDS = ("needs_attention", "stuck", "executions_failed")
#: Page kinds that never announce a compensated order: the park's (they announce parked orders), and a failed
#: execution's (a compensated execution SUCCEEDED, so ``ExecutionsFailed`` never counted it).
NOT_COMPENSATED_KINDS = ("needs_attention", "stuck", "executions_failed")
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
) -> tuple[str | None, str | None, str]:
    """(error, state, what the state invoked): ``ExecutionAborted`` where an execution was stopped, else the order's
    first task error (any attempt or repair, in history
    order); the last part is the text of the failing state's scheduled-event details (its function's name)."""
    marker = f":order-{order_id}-attempt-"
    mine = [(arn, events) for arn, events in histories if marker in arn]
    for _arn, events in mine:  # a stop decides the order's fate, whatever the execution retried before it
        if any(event.get("type") == ABORTED for event in events):
            return ABORTED, _last_state(events), ""
    for _arn, events in mine:
        error, state = first_failure(events)
        if error:
            return error, state, _invoked(events, state)
    return None, None, ""


def _last_state(events: Sequence[dict[str, Any]]) -> str | None:
    """The last state an execution entered."""
    names = [e["stateEnteredEventDetails"].get("name") for e in events if e.get("stateEnteredEventDetails")]
    return names[-1] if names else None


def _invoked(events: Sequence[dict[str, Any]], state: str | None) -> str:
    """The scheduled-event details of ``state``'s attempts, as text (a Lambda task names its function there)."""
    found, current = [], None
    for event in events:
        entered = event.get("stateEnteredEventDetails")
        if entered:
            current = entered.get("name")
        elif current == state:
            found += [json.dumps(v, default=str) for k, v in event.items() if k.endswith("ScheduledEventDetails")]
    return " ".join(found)


def _epoch(stamp: Any) -> float | None:
    """An order item's ISO timestamp (``created_at``, ``updated_at``) as epoch seconds; None without one."""
    if not stamp:
        return None
    return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()


def _functions(alarm: Mapping[str, Any] | None) -> set[str]:
    """The FunctionName dimensions an alarm watches (its metric, or its metric math's metrics)."""
    if not alarm:
        return set()
    metrics = [alarm, *(q["MetricStat"]["Metric"] for q in alarm.get("Metrics", []) if "MetricStat" in q)]
    return {d["Value"] for m in metrics for d in m.get("Dimensions", []) if d.get("Name") == "FunctionName"}


def _kinds(page: Mapping[str, Any]) -> set[str]:
    """A page's kinds: its alarm's, or a composite's children's in the incident it opened (decision 0030)."""
    return set(page.get("kinds") or [page["kind"]])


def order_pages(
    detail: Mapping[str, Any],
    invoked: str,
    pages: Sequence[Mapping[str, Any]],
    alarms: Mapping[str, Mapping[str, Any]],
    in_alarm: Collection[str],
) -> list[str]:
    """The alarms whose delivered page named this lost order's incident (``pages``: delivered, announcing,
    not a queue consumer's). Parked: a park page at or after the park (the order's ``updated_at``), or a park
    alarm still in ALARM (it paged and never returned to OK, so its incident was open when this order parked).
    Compensated: a page during the order's life (from ``created_at``) of an alarm on the failing step's
    function, or of an alarm on no function (a provider outage, the saga's aborted or timed-out executions), never a
    park page or a failed execution's (a compensated execution SUCCEEDED)."""
    if detail["status"] == "NEEDS_ATTENTION":
        parked_at = _epoch(detail.get("updated_at"))
        hits = [
            p
            for p in pages
            if _kinds(p) & set(PARK_KINDS) and (parked_at is None or p["at"] >= parked_at or p["alarm"] in in_alarm)
        ]
    else:
        since = _epoch(detail.get("created_at"))
        hits = [
            p
            for p in pages
            if _kinds(p) - set(NOT_COMPENSATED_KINDS)
            and (since is None or p["at"] >= since)
            and (
                not _functions(alarms.get(p["alarm"])) or any(f in invoked for f in _functions(alarms.get(p["alarm"])))
            )
        ]
    return sorted({str(p["alarm"]) for p in hits})


def _cause(error: str | None) -> str:
    if error is None:
        return "unknown"
    if error in BUSINESS_ERRORS:
        return "business"
    if error in ANOTHER_ACTOR_ERRORS:
        return "another_actor"
    return "operator" if error in OPERATOR_ERRORS else "infrastructure"


def consumer_alarms(alarms: Mapping[str, Mapping[str, Any]], consumers: Collection[str]) -> set[str]:
    """The alarms on a queue consumer's function (``FunctionName`` among ``consumers``, the functions of the
    SQS event source mappings): a throttled or failing consumer leaves its messages in the queue, which
    redelivers them, so its page announces no order the saga cancelled."""
    return {name for name, alarm in alarms.items() if _functions(alarm) & set(consumers)}


def lost_sales(
    submitted: Iterable[tuple[dict[str, Any], str | None]],
    details: Iterable[dict[str, Any]],
    histories: Sequence[tuple[str, list[dict[str, Any]]]],
    pages: Iterable[dict[str, Any]],
    ignored: Collection[str] = (),
    alarms: Mapping[str, Mapping[str, Any]] | None = None,
    in_alarm: Collection[str] = (),
) -> dict[str, Any]:
    """The report's ``lost_sales`` section: counts, the pages that announced them, and each lost order (with the
    alarms that named its incident: :func:`order_pages`). ``ignored``: alarms whose page announces no lost order
    (:func:`consumer_alarms`); ``alarms``: the alarms' definitions; ``in_alarm``: those in ALARM at the end."""
    valid = {order["order_id"] for order, _ in submitted if order_kind(order) == "ok"}
    announcing = [
        p for p in pages if p.get("delivered") and _kinds(p) & set(ANNOUNCING_KINDS) and p["alarm"] not in ignored
    ]
    orders = []
    for detail in details:
        if detail["order_id"] not in valid or detail["status"] not in LOST_STATUSES:
            continue
        error, state, invoked = _order_failure(detail["order_id"], histories)
        cause = _cause(error)
        named = order_pages(detail, invoked, announcing, alarms or {}, in_alarm) if cause in OURS else []
        orders.append(
            {
                "order_id": detail["order_id"],
                "status": detail["status"],
                "cause": cause,
                "error": error,
                "state": state,
                "paged": bool(named),
                "paged_by": named,
            }
        )
    ours = [o for o in orders if o["cause"] in OURS]
    return {
        "valid": len(valid),
        "lost": len(orders),
        "infrastructure": sum(o["cause"] == "infrastructure" for o in orders),
        "operator": sum(o["cause"] == "operator" for o in orders),
        "unpaged": sum(not o["paged"] for o in ours),
        "paged_by": sorted({str(p["alarm"]) for p in announcing}),
        # The ones nobody was paged for first: they are what a failing --check is about.
        "orders": sorted(orders, key=lambda o: o["paged"] or o["cause"] not in OURS)[:LISTED],
    }


def unpaged_lost_sales(
    submitted: Iterable[tuple[dict[str, Any], str | None]], details: Iterable[dict[str, Any]], state_machine_arn: str
) -> dict[str, Any]:
    """The section for a run that evaluates no alarm (the spike): every lost sale is one nobody was paged for."""
    return lost_sales(submitted, details, execution_histories(state_machine_arn), pages=[])


def run_lost_sales(run: Any, in_alarm: Collection[str]) -> dict[str, Any]:
    """The section for a run that evaluated its alarms (the fault matrix: once, at the end): its pages as the
    local run's report reads them, judged order by order (:func:`order_pages`)."""
    from harness.reporting.pager import composite_page_kinds, pager_section

    evaluator = run.alarm_evaluator
    queues = run.deployment.queues
    dlq_names = {queues[i]["name"] for i in run.deployment.dlq_ids if i in queues}
    composites = composite_page_kinds(run, dlq_names)
    pages = pager_section(evaluator.actions, evaluator.alarms, dlq_names, {}, evaluator.started, composites)["pages"]
    _, details = run.order_summary()
    histories = execution_histories(run.state_machine_arn)
    return lost_sales(run.submitted, details, histories, pages, alarms=evaluator.alarms, in_alarm=in_alarm)


def check_lost_sales(report: dict[str, Any]) -> str | None:
    """None unless a valid order was lost to our own infrastructure (or to no known cause) and nobody was paged."""
    section = report.get("lost_sales")
    if not section or not section["unpaged"]:
        return None
    unpaged = [o for o in section["orders"] if not o["paged"] and o["cause"] in OURS]
    examples = [
        f"{o['order_id']} {o['status']} ({o['error'] or 'no error in its history'} in {o['state']})"
        for o in unpaged[:3]
    ]
    return f"{section['unpaged']} valid orders lost and nobody paged; e.g. {examples}"


def lost_sales_line(section: dict[str, Any]) -> str:
    """``lost sales: N of M valid orders ...``: the run's lost sales in one line (harness.reporting.lost_sales)."""
    line = f"lost sales: {section['lost']} of {section['valid']} valid orders"
    if section["lost"]:
        by_operator = f", {section['operator']} by an operator" if section.get("operator") else ""
        ours = f"{section['infrastructure']} to our infrastructure{by_operator}"
        line += f" ({ours}, {section['unpaged']} nobody was paged for)"
    return line
