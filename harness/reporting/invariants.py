"""The chaos run's invariants (``ops local run --check``): each returns a failure message or None."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.reporting.lost_sales import INVARIANT as LOST_SALES
from harness.reporting.lost_sales import check_lost_sales
from harness.reporting.pager import precision_recall
from harness.workload.hostile import EXPECTED_SQS_ENDS, MAX_LOG_LINE_BYTES, SQS_KINDS, UNKNOWN_ORDER

Check = Callable[[dict[str, Any]], str | None]


def _no_duplicate_effects(r: dict[str, Any]) -> str | None:
    s = r["side_effects"]
    bad = {k: s[k] for k in ("duplicate_charges", "duplicate_refunds", "duplicate_shipments") if s[k]}
    return f"duplicate side effects: {bad}" if bad else None


def _charge_requests_bounded_by_crashes(r: dict[str, Any]) -> str | None:
    crashes = r["faults_injected"].get("crash", 0)
    requests = r["side_effects"]["duplicate_charge_requests"]
    return f"{requests} duplicate charge requests > {crashes} crashes" if requests > crashes else None


def _every_order_terminal(r: dict[str, Any]) -> str | None:
    o = r["orders"]
    if o["in_flight"]:
        stuck = r.get("stuck_orders") or {}
        example = next(iter(stuck.items()), None)
        return f"{o['in_flight']} orders in a non-terminal status" + (f"; e.g. {example}" if example else "")
    if o["lost"]:
        return f"{o['lost']} orders neither accepted nor in a DLQ: {r['lost_orders'][:5]}"
    return None


def _malformed_in_dlq_as_permanent(r: dict[str, Any]) -> str | None:
    injected = r["faults_injected"].get("malformed", 0)
    found = r["malformed_in_dlq_as_permanent"]
    refused = r.get("malformed_refused_at_send", 0)  # --via api: refused by the API's validator, never enqueued
    if found + refused != injected:
        return f"{found} malformed messages in a DLQ as permanent, {refused} refused at send, {injected} injected"
    return None


def _no_reservation_held(r: dict[str, Any]) -> str | None:
    """No stock held for an order that did not complete, except a parked one: a NEEDS_ATTENTION order
    may have shipped (e.g. its status write failed after ShipOrder), so its stock is the operator's call."""
    held = (r.get("ledger") or {}).get("reservations_outstanding_orders")
    if held is None:  # a report without the list: the count alone
        n = r["side_effects"]["reservations_outstanding"]
        return f"{n} reservations held for orders that did not complete" if n else None
    held = [h for h in held if not str(h).endswith(":NEEDS_ATTENTION")]
    return f"{len(held)} reservations held for orders that did not complete; e.g. {held[:3]}" if held else None


def _every_log_line_correlated(r: dict[str, Any]) -> str | None:
    n = r["logs"]["without_correlation_id"]
    return f"{n} log lines without a correlation ID" if n else None


def _dlq_alarms_match_depths(r: dict[str, Any]) -> str | None:
    wrong = [q for q, state in r["dlq_alarm_states"].items() if state["in_alarm"] != (state["depth"] > 0)]
    return f"DLQ alarm state disagrees with depth for {wrong}" if wrong else None


def _replay_processed_without_duplicates(r: dict[str, Any]) -> str | None:
    replay = r.get("replay")
    if not replay:
        return None
    if replay["unprocessed"]:
        return f"replayed messages not processed: {replay['unprocessed'][:5]}"
    if replay["new_duplicates"]:
        return f"replay produced duplicates: {replay['new_duplicates']}"
    return None


def _hostile_messages_dead_lettered(r: dict[str, Any]) -> str | None:
    hostile = r.get("hostile") or {}
    wrong = {
        kind: {k: v for k, v in counts.items() if k != "injected"}
        for kind, counts in hostile.items()
        if kind in SQS_KINDS and sum(counts.get(end, 0) for end in EXPECTED_SQS_ENDS) != counts.get("injected", 0)
    }
    if not wrong:
        return None
    examples = [m for m in r.get("hostile_misplaced", []) if m.get("kind") in SQS_KINDS][:3]
    return f"hostile messages not in the orders DLQ as permanent on their first receive: {wrong}; e.g. {examples}"


def _unknown_orders_failed_without_effects(r: dict[str, Any]) -> str | None:
    counts = (r.get("hostile") or {}).get(UNKNOWN_ORDER) or {}
    injected, failed = counts.get("injected", 0), counts.get("execution_failed", 0)
    effects = counts.get("side_effects", 0)
    if failed == injected and not effects:
        return None
    examples = [m for m in r.get("hostile_misplaced", []) if m.get("kind") == UNKNOWN_ORDER][:3]
    return f"{injected} unknown-order executions: {failed} FAILED, {effects} side effects; e.g. {examples}"


def _no_pii_leaked(r: dict[str, Any]) -> str | None:
    pii = r.get("pii")
    if pii is None:
        return None
    found = {k: pii[k] for k in ("log_lines", "execution_history_events", "dlq_message_attributes") if pii.get(k)}
    return f"payment tokens, names or address lines found in {found}; e.g. {pii['examples'][:2]}" if found else None


def _log_lines_bounded(r: dict[str, Any]) -> str | None:
    logs = r["logs"]
    over = logs.get("lines_over_16_kib", 0)
    if not over:
        return None
    return f"{over} log lines over {MAX_LOG_LINE_BYTES} bytes (longest {logs.get('longest_line_bytes')})"


def _no_denied_calls(r: dict[str, Any]) -> str | None:
    """Every call a function or the state machine made was allowed by its role in the template."""
    iam = r.get("iam") or {}
    denied = {name: p["denied"] for name, p in iam.items() if p["denied"]["count"]}
    if not denied:
        return None
    counts = {name: d["count"] for name, d in denied.items()}
    examples = [f"{name}: {e['action']} on {e['resource']}" for name, d in denied.items() for e in d["first"]][:3]
    return f"calls denied by the template's IAM policies: {counts}; e.g. {examples}"


def _failed_executions_parked_or_refused(r: dict[str, Any]) -> str | None:
    f = r.get("failed_executions")
    if not f or not f["unexplained"]:
        return None
    return (
        f"{f['failed']} FAILED executions != {f['parked']} parked + {f['refused']} refused; e.g. {f['unexplained'][:3]}"
    )


def _terminal_orders_agree_with_side_effects(r: dict[str, Any]) -> str | None:
    wrong = r.get("status_disagreements") or []
    return (
        f"{len(wrong)} terminal orders whose side effects disagree with their status; e.g. {wrong[:3]}"
        if wrong
        else None
    )


def _pager_precise_and_complete(r: dict[str, Any]) -> str | None:
    if "pager" not in r:
        return None
    precision, recall = precision_recall(r["pager"])
    if precision == 100.0 and recall == 100.0:
        return None
    unexplained = [p["alarm"] for p in r["pager"]["pages"] if not (p["cause"] and p["delivered"])]
    silent = [f["fault"] for f in r["pager"]["faults"] if not f["paged_by"]]
    return f"pager precision {precision}%, recall {recall}%; unexplained {unexplained[:3]}, nobody paged for {silent}"


def _one_notification_per_incident(r: dict[str, Any]) -> str | None:
    """Issue 41: one incident, one notification (pages and tickets alike); none from a deploy or an ops command."""
    section = r.get("notifications")
    if section is None:
        return None
    problems = []
    if r.get("notifications_at_start"):
        problems.append(f"{r['notifications_at_start']} notifications at the deployment's start")
    noisy = [f"{g['incident']}: {g['notifications']} ({', '.join(g['alarms'][:4])})" for g in section["incidents"]]
    noisy = [n for n, g in zip(noisy, section["incidents"], strict=True) if g["notifications"] > 1]
    if noisy:
        problems.append(f"incidents with more than one notification: {noisy[:3]}")
    if section["caused_by_ops"]:
        caused = [(n["ops_command"], n["alarm"]) for n in section["caused_by_ops"]]
        problems.append(f"notifications caused by ops commands: {caused[:3]}")
    return "; ".join(problems) or None


CHECKS: dict[str, Check] = {
    "no_duplicate_side_effects": _no_duplicate_effects,
    "duplicate_charge_requests_at_most_crashes": _charge_requests_bounded_by_crashes,
    "every_order_terminal_or_rejected": _every_order_terminal,
    "malformed_messages_in_dlq_as_permanent": _malformed_in_dlq_as_permanent,
    "no_reservation_held_for_incomplete_orders": _no_reservation_held,
    "every_log_line_has_correlation_id": _every_log_line_correlated,
    "dlq_alarm_in_alarm_exactly_when_dlq_non_empty": _dlq_alarms_match_depths,
    "replayed_transient_messages_processed_without_duplicates": _replay_processed_without_duplicates,
    "hostile_messages_in_dlq_as_permanent_on_first_receive": _hostile_messages_dead_lettered,
    "unknown_order_executions_failed_without_side_effects": _unknown_orders_failed_without_effects,
    "no_payment_token_name_or_address_in_logs_histories_or_dlq_attributes": _no_pii_leaked,
    "no_log_line_over_16_kib": _log_lines_bounded,
    "no_call_denied_by_iam": _no_denied_calls,
    "failed_executions_equal_parked_plus_refused": _failed_executions_parked_or_refused,
    "no_terminal_order_disagrees_with_its_side_effects": _terminal_orders_agree_with_side_effects,
    "pager_precision_and_recall_100_percent": _pager_precise_and_complete,
    "one_notification_per_incident_none_from_deploys_or_ops": _one_notification_per_incident,
    LOST_SALES: check_lost_sales,
}


def check(report: dict[str, Any]) -> dict[str, str | None]:
    """``{invariant: None if it holds, else why not}``."""
    return {name: fn(report) for name, fn in CHECKS.items()}
