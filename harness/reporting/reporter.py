"""The run's report: counted from tables, queues, histories and the sandbox ledger, checked by invariants."""

from __future__ import annotations

import functools
import json
import time
from collections import Counter
from typing import Any

from harness.faults.chaos import DeliveryPlan
from harness.reporting.costs import dollars_per_million_orders, per_order
from harness.reporting.costs_all_in import BEFORE, WARN_APP_LOGS, all_in
from harness.reporting.iam_reasons import explain
from harness.reporting.invariants import check
from harness.reporting.lost_sales import consumer_alarms, lost_sales
from harness.reporting.notifications import per_incident
from harness.reporting.pager import composite_page_kinds, pager_section
from harness.reporting.report import (
    TERMINAL,
    dlq_depths,
    ledger_summary,
    log_summary,
    metric_totals,
    order_statuses,
    scan_all,
)
from harness.reporting.run_view import RunView
from harness.reporting.saga_checks import failed_executions, status_disagreements
from harness.workload.hostile import PiiFindings, line_sizes, side_effects_by_order
from harness.workload.hostile import execution_name as hostile_execution_name
from harness.workload.hostile import outcomes as hostile_outcomes
from harness.workload.orders import PII_PATTERN
from local_cloud.calls import CallCounter
from local_cloud.clients import aws
from local_cloud.histories import (
    History,
    billed_transitions_per_execution,
    execution_histories,
    failure_summary,
    transitions_per_execution,
)

#: The ledger figures the report repeats as ``side_effects``.
SIDE_EFFECT_KEYS = (
    "charges",
    "duplicate_charges",
    "duplicate_charge_requests",
    "shipments",
    "duplicate_shipments",
    "refunds",
    "duplicate_refunds",
    "refunds_without_charge",
    "reservations_outstanding",
)


def body_order_id(body: str) -> str | None:
    """The ``order_id`` a message body names, if it is a JSON object naming one (never raises)."""
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):  # hostile bodies: malformed, or nested beyond the recursion limit
        return None
    order_id = parsed.get("order_id") if isinstance(parsed, dict) else None
    return str(order_id) if order_id is not None else None


def order_summary(run: RunView) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """Order counts by outcome, and each submitted order's status and correlation ID."""
    orders = order_statuses(run.orders_table)
    submitted_ids = list(dict.fromkeys(o["order_id"] for o, _ in run.submitted))
    statuses = Counter(orders.get(oid, {}).get("status", "NOT_ACCEPTED") for oid in submitted_ids)
    counts = {
        "submitted": len(submitted_ids),
        "completed": statuses.get("COMPLETED", 0),
        "compensated": statuses.get("COMPENSATED", 0),
        "needs_attention": statuses.get("NEEDS_ATTENTION", 0),
        "failed": statuses.get("NOT_ACCEPTED", 0),
        "in_flight": sum(n for s, n in statuses.items() if s not in TERMINAL and s != "NOT_ACCEPTED"),
    }
    details = [
        {
            "order_id": oid,
            "status": orders.get(oid, {}).get("status", "NOT_ACCEPTED"),
            "correlation_id": orders.get(oid, {}).get("correlation_id"),
            # When it was received and last moved: the lost-sales check's order-by-order page
            # (harness.reporting.lost_sales).
            "created_at": orders.get(oid, {}).get("created_at"),
            "updated_at": orders.get(oid, {}).get("updated_at"),
        }
        for oid in submitted_ids
    ]
    return counts, details


def report(run: RunView, wall_seconds: float) -> dict[str, Any]:
    """The report's core sections (orders, executions, ledger, DLQs, alarms, logs, metrics, IAM)."""
    counts, details = order_summary(run)
    orders = order_statuses(run.orders_table)
    sfn = aws("stepfunctions")
    executions = [
        e
        for p in sfn.get_paginator("list_executions").paginate(stateMachineArn=run.state_machine_arn)
        for e in p["executions"]
    ]
    logs, emf, _ = run.capture.records()
    return {
        "orders": counts,
        "order_details": details,
        "executions": dict(Counter(e["status"] for e in executions)),
        "ledger": ledger_summary(run.ledger_table, run.inventory_table, orders),
        "dlq": dlq_depths(run.deployment.queues, run.deployment.dlq_ids),
        "alarms_in_alarm": run.evaluate_alarms(),
        "logs": log_summary(logs),
        "metrics": metric_totals(emf),
        "event_sources": {p.spec.function.name: vars(p.stats) for p in run.pollers},
        "throttles": dict(run.limits.throttles),
        # 5XX answers of the local order API (AWS/ApiGateway 5XXError datapoints): what explains an API page.
        "api_server_errors": int(
            sum(v for _, name, _, _, v in run.deployment.service_metrics.since(0)[0] if name == "5XXError")
        ),
        "iam": explain(run.deployment.iam.report()) if run.deployment.iam else {},
        "elapsed": {
            "wall_seconds": round(wall_seconds, 3),
            "simulated_seconds": round(run.clock.simulated_seconds, 3),
        },
    }


def dlq_contents(run: RunView) -> tuple[dict[str, dict[str, int]], list[Any]]:
    """Every DLQ message of the stack (left in place), and counts by queue and category."""
    from ops.dlq import QUEUES, peek

    target = run.target()  # moto is one server: its target short-polls (no false empty answer to wait out)
    messages: list[Any] = []
    categories: dict[str, dict[str, int]] = {}
    for name, (_, dlq_output) in QUEUES.items():
        found = peek(target, target.output(dlq_output))
        categories[name] = dict(Counter(m.category for m in found))
        messages.extend((name, m) for m in found)
    return categories, messages


def state_transitions(run: RunView, sample: int = 100) -> float:
    """Average state transitions per execution, from a sample of execution histories."""
    return transitions_per_execution(execution_histories(run.state_machine_arn), sample)


def pii_findings(run: RunView, dlq_messages: list[Any], histories: list[History] | None = None) -> dict[str, Any]:
    """Generated orders' tokens, names and address lines in captured log lines, in every
    execution's history, in DLQ message attributes (none may be anywhere)."""
    findings = PiiFindings()
    for line in run.capture.lines:
        findings.scan("log_lines", line, PII_PATTERN)
    for _, events in histories if histories is not None else execution_histories(run.state_machine_arn):
        for event in events:
            findings.scan("execution_history_events", json.dumps(event, default=str), PII_PATTERN)
    for _, message in dlq_messages:
        findings.scan("dlq_message_attributes", json.dumps(message.attributes), PII_PATTERN)
    return findings.as_dict()


def hostile_report(run: RunView, plan: DeliveryPlan, dlq_messages: list[Any]) -> dict[str, Any]:
    """Where each hostile input ended (``hostile``) and the ones that ended elsewhere (``hostile_misplaced``)."""
    if not plan.hostile:
        return {"hostile": {}, "hostile_misplaced": []}
    unknown = {h.order_id for h in plan.hostile_executions}
    sfn = aws("stepfunctions")
    status = {}
    for hostile in plan.hostile_executions:
        name = hostile_execution_name(hostile.order_id, hostile.payment_attempt)
        arn = run.state_machine_arn.replace(":stateMachine:", ":execution:") + f":{name}"
        status[hostile.order_id] = sfn.describe_execution(executionArn=arn)["status"]
    effects = (
        side_effects_by_order(unknown, scan_all(run.ledger_table), scan_all(run.inventory_table)) if unknown else {}
    )
    accepted = set(order_statuses(run.orders_table))
    crashed: Counter[str] = Counter()
    for poller in run.pollers:
        crashed.update(poller.interrupted)
    ended, misplaced = hostile_outcomes(
        plan.hostile,
        dlq_messages,
        accepted,
        status,
        effects,
        dict(crashed),
        run.producer.refused_at_send,
        refused_at_edge=run.producer.api is not None,
    )
    return {"hostile": ended, "hostile_misplaced": misplaced}


def finish_report(run: RunView, report: dict[str, Any], calls: CallCounter, started: float, plan: DeliveryPlan) -> None:
    """Add DLQ, hostile, customer-data, loss, alarm, side-effect and cost sections; check the invariants."""
    categories, messages = dlq_contents(run)
    report["dlq_categories"] = categories
    # Distinct messages: a crash after dead-lettering can leave two copies of one (at-least-once).
    report["malformed_in_dlq_as_permanent"] = len(
        {
            m.correlation_id
            for _, m in messages
            if m.category == "permanent" and str(m.correlation_id).startswith("cid-malformed-")
        }
    )
    # Through the order API (--via api) the edge refuses a malformed body at once (400): never enqueued.
    report["malformed_refused_at_send"] = len(
        {cid for cid in run.producer.refused_at_send if str(cid).startswith("cid-malformed-")}
    )
    in_dlq = {body_order_id(m.body) for _, m in messages}
    report.update(hostile_report(run, plan, messages))
    histories = execution_histories(run.state_machine_arn)  # read once: the scan and the transitions
    report["pii"] = pii_findings(run, messages, histories)
    report["logs"].update(line_sizes(run.capture.lines))
    _lost_and_stuck(report, in_dlq, histories)
    report["failed_executions"] = failed_executions(histories)
    report["status_disagreements"] = status_disagreements(
        order_statuses(run.orders_table), scan_all(run.ledger_table), scan_all(run.inventory_table)
    )
    report["alarms_in_alarm"] = run.evaluate_alarms()
    report["dlq_alarm_states"] = run.alarm_evaluator.dlq_states(report["alarms_in_alarm"], report["dlq"])
    ledger = report["ledger"]
    report["side_effects"] = {k: ledger[k] for k in SIDE_EFFECT_KEYS}
    report["duplicates_suppressed"] = int(report["metrics"].get("DuplicatesSuppressed", 0))
    report["cost"] = cost_report(run, report, calls, histories)
    report["elapsed"] = {
        "wall_seconds": round(time.monotonic() - started, 3),
        "simulated_seconds": round(run.clock.simulated_seconds, 3),
    }
    evaluator = run.alarm_evaluator
    dlq_names = {run.deployment.queues[i]["name"] for i in run.deployment.dlq_ids if i in run.deployment.queues}
    _pager_and_notifications(run, report, dlq_names)
    consumers = consumer_alarms(evaluator.alarms, {p.spec.function.name for p in run.pollers})
    report["lost_sales"] = lost_sales(
        run.submitted,
        report["order_details"],
        histories,
        report["pager"]["pages"],
        ignored=consumers,
        alarms=evaluator.alarms,
        in_alarm=report["alarms_in_alarm"],
    )
    report["invariants"] = check(report)


def _lost_and_stuck(report: dict[str, Any], in_dlq: set[Any], histories: list[Any]) -> None:
    """Orders never accepted nor dead-lettered (lost), and the first 20 non-terminal ones with their failures."""
    lost = [
        d["order_id"] for d in report["order_details"] if d["status"] == "NOT_ACCEPTED" and d["order_id"] not in in_dlq
    ]
    report["orders"]["rejected"] = report["orders"]["failed"] - len(lost)
    report["orders"]["lost"] = len(lost)
    report["lost_orders"] = lost
    stuck = [d["order_id"] for d in report["order_details"] if d["status"] not in (*TERMINAL, "NOT_ACCEPTED")]
    report["stuck_orders"] = {
        order_id: [
            failure_summary(arn, events)
            for arn, events in histories
            if f":{hostile_execution_name(order_id, 1)[:-1]}" in arn  # any attempt (or repair) of it
        ]
        for order_id in stuck[:20]
    }


def _pager_and_notifications(run: RunView, report: dict[str, Any], dlq_names: set[str]) -> None:
    """The report's ``pager`` (pages and their causes) and ``notifications`` (per incident: issue 41)."""
    evaluator = run.alarm_evaluator
    report["pager"] = pager_section(
        evaluator.actions, evaluator.alarms, dlq_names, report, evaluator.started, composite_page_kinds(run, dlq_names)
    )
    history = evaluator.actions.history if evaluator.actions else []
    notices = [{"alarm": n.alarm, "state": n.state, "at": n.at} for n in history]
    at_start = int(report.get("notifications_at_start", 0))
    report["notifications"] = per_incident(
        notices[at_start:], report.get("incidents") or [], report.get("ops_commands") or [], evaluator.started
    )


def cost_report(
    run: RunView, report: dict[str, Any], calls: CallCounter, histories: list[tuple[str, list[dict[str, Any]]]]
) -> dict[str, Any]:
    """Units per order, the pipeline's USD per million orders, and the whole bill (with the chosen
    levers, and as it was before them: decision 0022)."""
    transitions = billed_transitions_per_execution(histories)  # retries included, as AWS bills them
    lambda_invocations = sum(n for (service, _), n in calls.calls.items() if service == "lambda") + sum(
        p.stats.batches for p in run.pollers
    )
    units = per_order(
        calls.operations(),
        lambda_invocations,
        int(transitions * len(report["order_details"])),
        max(1, len(report["order_details"])),
    )
    usd = dollars_per_million_orders(units)
    bill = functools.partial(
        all_in,
        pipeline_usd=usd["standard_workflow"],
        orders=len(report["order_details"]),
        lambda_invocations=lambda_invocations,
        log_lines=run.capture.pipeline_lines,  # a provider stand-in's lines are its own bill
        histories=histories,
        operations=calls.operations(),
    )
    return {
        "per_order": {k: round(v, 2) for k, v in vars(units).items()},
        "usd_per_million_orders": usd,
        "all_in": bill(),
        "all_in_before_levers": bill(levers=BEFORE),
        "all_in_warn_app_logs": bill(levers=WARN_APP_LOGS),
    }
