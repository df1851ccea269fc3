"""The pager as a person sees it in the local run: every alarm notification, delivered or refused,
the incident that explains each page, and for each harmful injected fault the page that announced it.

Precision: pages explained by an incident of the run / pages. Recall: harmful fault kinds injected
that some page announced / harmful fault kinds injected. Both must be 100% (``--check``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from local_cloud.alarm_actions import AlarmActions, Notice

#: Notifications that are pages: ALARM, and INSUFFICIENT_DATA for the alarms that notify on it (a heartbeat
#: whose metric stopped: docs/decisions/0023).
PAGE_STATES = ("ALARM", "INSUFFICIENT_DATA")
#: Injected faults an operator must hear about -> the alarm kinds that announce them.
HARMFUL: dict[str, tuple[str, ...]] = {
    "malformed": ("dlq",),
    "hostile": ("dlq", "function", "executions_failed"),
    "crash": ("function",),
    "stop": ("executions_aborted",),
    "status_write_error": ("executions_failed", "needs_attention", "function", "stuck"),
    "park_failure": ("needs_attention", "function", "executions_failed", "stuck"),
    # Fault families of docs/decisions/0023 (recall counts them once a run injects them).
    "throttle_sfn": ("throttled",),
    "provider_outage": ("provider_outage", "needs_attention", "executions_failed", "stuck"),
    "sweeper_stopped": ("sweeper_stopped",),
    "api_5xx": ("api",),
}
#: Faults whose harm depends on getting past the edge -> the report's count of those that did. A malformed order
#: the order API refused (400) told its caller at once: no incident, no page; one dead-lettered is an incident.
REACHED_THE_PIPELINE: dict[str, str] = {"malformed": "malformed_in_dlq_as_permanent"}
#: Each injected incident's family (harness.run.incidents) -> the alarm kind that must announce it, within
#: :data:`INCIDENT_PAGE_SECONDS` of the incident becoming harmful (the seeds' one minute).
INCIDENT_ALARM: dict[str, str] = {
    "provider_outage": "provider_outage",
    "sweeper_stopped": "sweeper_stopped",
    "throttle_sfn": "throttled",
    "api_5xx": "api",
}
INCIDENT_PAGE_SECONDS = 60.0
#: Decimals of the pages' times in the report; the instants they are compared with are rounded the same way.
PAGE_TIME_DECIMALS = 3
#: What a provider outage alarm counts: the step middleware's operations that failed on their first call (the
#: pipeline's, decision 0033), its dependency failures, or every transient failure (``TransientShareAlarm``'s default).
#: (``lambda_resilience.step``'s names; tests/ops/test_pager_report.py checks they are the same.)
OUTAGE_FAILURE_METRICS = frozenset({"DependencyFirstCallFailures", "DependencyFailures", "TransientFailures"})
#: Injected faults that cause function errors the middleware does not expect (so they page).
_FUNCTION_FAULTS = ("crash", "park_failure", "hostile", "status_write_error")


def page_line(notice: Notice) -> str:
    """One alarm notification as the page log shows it (delivered to the topic's subscribers, or refused)."""
    when = datetime.fromtimestamp(notice.at, UTC).strftime("%H:%M:%S")
    outcome = "delivered" if notice.delivered else f"REFUSED ({notice.refusal})"
    return f"page {notice.state} {notice.alarm} at {when} (simulated): {notice.reason}; {outcome}"


def alarm_kind(alarm: Mapping[str, Any], dlq_names: set[str]) -> str:
    """What an alarm announces: dlq, needs_attention, age, function, function_throttled, executions_<status>,
    throttled, api, sweeper_stopped, provider_outage, stuck, other."""
    metric = alarm.get("MetricName")
    dims = {d["Name"]: d["Value"] for d in alarm.get("Dimensions", [])}
    if metric is None:  # metric math: what its metrics watch (a DLQ's arrivals alarm reads the DLQ's depth)
        watched = [q["MetricStat"]["Metric"] for q in alarm.get("Metrics", []) if "MetricStat" in q]
        names = {m["MetricName"] for m in watched}
        if "Errors" in names:
            return "function"
        if names & OUTAGE_FAILURE_METRICS:
            return "provider_outage"
        if "5XXError" in names:  # the API's 5XX less the providers' webhook route's (decision 0031)
            return "api"
        if names != {"ApproximateNumberOfMessagesVisible"}:
            return "other"
        metric, dims = "ApproximateNumberOfMessagesVisible", {d["Name"]: d["Value"] for d in watched[0]["Dimensions"]}
    if metric == "ApproximateAgeOfOldestMessage":
        return "age"
    if metric == "ApproximateNumberOfMessagesVisible":
        return "dlq" if dims.get("QueueName") in dlq_names else "needs_attention"
    if metric in ("ExecutionsFailed", "ExecutionsAborted", "ExecutionsTimedOut"):
        return {"ExecutionsFailed": "executions_failed", "ExecutionsAborted": "executions_aborted"}.get(
            metric, "executions_timed_out"
        )
    if metric == "ExecutionThrottled":
        return "throttled"
    if metric == "5XXError":
        return "api"
    if metric == "Errors":
        return "function"
    if metric == "SweeperRuns":
        return "sweeper_stopped"
    if metric == "ParkedOrders":
        return "needs_attention"
    if metric == "Throttles":
        return "function_throttled"
    return "stuck" if "Stuck" in metric or "Mismatch" in metric else "other"


def _fault_family(kind: str) -> str:
    return "hostile" if kind.startswith("hostile") else kind


def _cause(kind: str, report: Mapping[str, Any], faults: Mapping[str, int]) -> str | None:
    """The run's incident that explains a page of an alarm of ``kind``; None: nothing does."""
    families = {_fault_family(k): 0 for k in faults}
    for k, n in faults.items():
        families[_fault_family(k)] += n
    executions = report.get("executions", {})
    if kind == "dlq":
        return (
            "messages dead-lettered (" + ", ".join(f"{k} {families.get(k, 0)}" for k in ("malformed", "hostile")) + ")"
        )
    if kind == "needs_attention" and report.get("orders", {}).get("needs_attention"):
        return f"{report['orders']['needs_attention']} orders parked for an operator"
    if kind == "executions_failed" and executions.get("FAILED"):
        return f"{executions['FAILED']} executions failed"
    if kind == "executions_aborted" and executions.get("ABORTED"):
        return f"{executions['ABORTED']} executions stopped (injected stop {families.get('stop', 0)})"
    if kind == "function" and any(families.get(f) for f in _FUNCTION_FAULTS):
        return "unexpected function errors: " + ", ".join(
            f"{f} {families[f]}" for f in _FUNCTION_FAULTS if families.get(f)
        )
    if kind == "stuck" and any(families.get(f) for f in ("status_write_error", "park_failure", "stop", "crash")):
        return "orders left mid-way by injected status-write, park or stop faults"
    if kind == "age" and any(families.get(f) for f in ("crash", "throttle_dynamodb", "throttle_sqs")):
        return "orders waited over the age threshold behind injected crashes (visibility timeouts) and throttling"
    throttles = report.get("throttles") or {}
    if kind == "throttled" and (families.get("throttle_sfn") or throttles.get("stepfunctions:StateTransition")):
        return f"state transitions throttled ({throttles.get('stepfunctions:StateTransition', 0)})"
    if kind == "function_throttled" and throttles.get("lambda:Invoke"):
        return f"{throttles['lambda:Invoke']} invocations throttled (concurrency exhausted)"
    if kind == "api" and (report.get("api_server_errors") or families.get("api_5xx")):
        return f"the order API answered {report.get('api_server_errors', 0)} 5XX"
    if kind == "provider_outage" and families.get("provider_outage"):
        return f"provider outage injected ({families['provider_outage']} failed calls)"
    lost_answers = sum(n for k, n in families.items() if k.startswith("ambiguous"))
    if kind == "provider_outage" and lost_answers:
        # The providers' own failures include their answers lost after they acted (their transport failing); the
        # steps' throttled DynamoDB calls are not the providers' (issue 41, decision 0033) and explain no page.
        return f"provider answers lost after acting (injected {lost_answers})"
    if kind == "sweeper_stopped" and families.get("sweeper_stopped"):
        return "the sweeper's schedule stopped (injected)"
    return None


def pager_section(
    actions: AlarmActions | None,
    alarms: Mapping[str, Mapping[str, Any]],
    dlq_names: set[str],
    report: Mapping[str, Any],
    started: float,
    composites: Mapping[tuple[str, float], list[str]] | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """Pages (ALARM notifications) with their cause, and each harmful injected fault with its pages.
    ``composites``: a composite alarm's notification -> the kinds of its alarms in the incident it opened
    (:func:`harness.reporting.notifications.composite_kinds`); it announces each of them."""
    faults: Mapping[str, int] = report.get("faults_injected") or {}
    pages: list[dict[str, Any]] = []
    for n in actions.history if actions else []:
        if n.state not in PAGE_STATES:
            continue
        kinds = [alarm_kind(alarms[n.alarm], dlq_names)] if n.alarm in alarms else []
        kinds = kinds or (composites or {}).get((n.alarm, n.at)) or ["other"]
        kind = kinds[0]
        cause = next((c for c in (_cause(k, report, faults) for k in kinds) if c), None)
        pages.append(
            {
                "alarm": n.alarm,
                "kind": kind,
                "kinds": kinds,
                "at": round(n.at, PAGE_TIME_DECIMALS),
                "after_s": round(n.at - started, 1),
                "reason": n.reason,
                "delivered": n.delivered,
                "refusal": n.refusal,
                "cause": cause,
            }
        )
    first_at: Mapping[str, float] = report.get("faults_first_at") or {}
    incidents: list[Mapping[str, Any]] = report.get("incidents") or []
    # An incident that never became harmful (an outage too short to be one by its alarm's definition) is
    # reported with harmful_at None and is not counted.
    announced = [_incident_row(i, pages, started) for i in incidents if i.get("harmful_at") is not None]
    for family in sorted({_fault_family(k) for k, v in faults.items() if v}):
        if family not in HARMFUL or not report.get(REACHED_THE_PIPELINE.get(family, ""), True):
            continue
        if any(i["family"] == family for i in incidents):
            continue  # counted per incident above
        kinds = [k for k, v in faults.items() if v and _fault_family(k) == family]
        happened = round(min((first_at[k] for k in kinds if k in first_at), default=started), PAGE_TIME_DECIMALS)
        hits = [p for p in pages if set(p["kinds"]) & set(HARMFUL[family]) and p["delivered"]]
        announced.append(
            {
                "fault": family,
                "injected": sum(faults[k] for k in kinds),
                "first_injected_after_s": round(happened - started, 1),
                "paged_by": sorted({p["alarm"] for p in hits}),
                # Time to page: from the first fault of the family to the first page at or after it.
                "first_page_after_s": min(
                    (round(p["at"] - happened, 1) for p in hits if p["at"] >= happened), default=None
                ),
            }
        )
    return {"pages": pages, "faults": announced}


def _incident_row(incident: Mapping[str, Any], pages: list[dict[str, Any]], started: float) -> dict[str, Any]:
    """One injected incident and the pages of its family's alarm delivered within a minute of its becoming
    harmful: a page of that alarm before it (the alarm already in ALARM) does not announce it."""
    # Rounded as the pages' times are (a page at the very instant must not read as before it).
    kind, at = INCIDENT_ALARM[incident["family"]], round(float(incident["harmful_at"]), PAGE_TIME_DECIMALS)
    hits = [
        p
        for p in pages
        if kind in p.get("kinds", [p["kind"]]) and p["delivered"] and at <= p["at"] <= at + INCIDENT_PAGE_SECONDS
    ]
    return {
        "fault": incident["family"],
        "incident": True,
        "detail": incident.get("detail", ""),
        "injected": 1,
        "first_injected_after_s": round(at - started, 1),
        "paged_by": sorted({p["alarm"] for p in hits}),
        "first_page_after_s": min((round(p["at"] - at, 1) for p in hits), default=None),
    }


def precision_recall(pager: Mapping[str, Any]) -> tuple[float, float]:
    """(precision, recall) in percent; 100 when there is nothing to measure."""
    pages, faults = pager.get("pages", []), pager.get("faults", [])
    precision = 100.0 * sum(1 for p in pages if p["cause"] and p["delivered"]) / len(pages) if pages else 100.0
    recall = 100.0 * sum(1 for f in faults if f["paged_by"]) / len(faults) if faults else 100.0
    return round(precision, 1), round(recall, 1)


def pager_table(pager: Mapping[str, Any]) -> list[str]:
    """The pager table the local run prints."""
    lines = [f"{'page (alarm)':<64} {'after':>8}  cause"]
    for p in pager.get("pages", []):
        cause = p["cause"] or "UNEXPLAINED"
        if not p["delivered"]:
            cause += f" (REFUSED: {p['refusal']})"
        lines.append(f"{p['alarm'][:64]:<64} {p['after_s']:>7}s  {cause}")
    for f in pager.get("faults", []):
        paged = ", ".join(a.split("-", 2)[-1] for a in f["paged_by"]) or (
            f"NOBODY PAGED within {INCIDENT_PAGE_SECONDS:g} s" if f.get("incident") else "NOBODY PAGED"
        )
        if f.get("first_page_after_s") is not None:
            at = f" first page {f['first_page_after_s']} s after the first fault"
        else:
            at = " (announced only before the fault: alarm already in ALARM)" if f["paged_by"] else ""
        what = f"fault {f['fault']}"
        if f.get("incident"):
            detail = f" ({f['detail']})" if f.get("detail") else ""
            what = f"incident {f['fault']}{detail} at {f['first_injected_after_s']} s"
        lines.append(f"{what} x{f['injected']}: {paged}{at}")
    precision, recall = precision_recall(pager)
    lines.append(f"pager: {len(pager.get('pages', []))} pages, precision {precision}%, recall {recall}%")
    return lines


def pages(actions: AlarmActions | None) -> list[dict[str, Any]]:
    """Every ALARM notification of the run (a page), delivered or refused, in order."""
    return [
        {"alarm": n.alarm, "at": round(n.at, 3), "reason": n.reason, "delivered": n.delivered, "refusal": n.refusal}
        for n in (actions.history if actions else [])
        if n.state in PAGE_STATES
    ]


def composite_page_kinds(run: Any, dlq_names: set[str]) -> dict[tuple[str, float], list[str]]:
    """Each composite notification's kinds (:func:`harness.reporting.notifications.composite_kinds`) of a local run."""
    evaluator = run.alarm_evaluator
    if evaluator.composites is None:
        return {}
    kind_of = {name: alarm_kind(alarm, dlq_names) for name, alarm in evaluator.alarms.items()}
    rules = {name: rule.alarms() for name, rule in evaluator.composites.rules.items()}
    from harness.reporting.notifications import composite_kinds

    return composite_kinds(evaluator.transitions, rules, kind_of)
