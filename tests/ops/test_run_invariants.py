"""The local run's invariants (``harness.reporting.invariants.CHECKS``) see what they name.

For each check without a test of its own elsewhere: a report where the invariant is broken (the check
names what broke, and no other check fails on it) and one where it holds. The report's sections are
built by the functions the run builds them with where those are pure (``log_summary``, ``dlq_states``,
``failed_executions``, ``status_disagreements``, IAM's ``explain`` of a principal's report), by hand
otherwise, in the shape ``harness.reporting.reporter.finish_report`` writes. No emulator runs.
"""

from __future__ import annotations

from typing import Any

from harness.reporting.iam_reasons import explain
from harness.reporting.invariants import check
from harness.reporting.report import log_summary
from harness.reporting.saga_checks import failed_executions, status_disagreements
from local_cloud.alarms import AlarmEvaluator
from local_cloud.capture import LineCapture
from local_cloud.iam import policy_from_documents
from local_cloud.iam_principals import Principal
from tests.ops.test_hostile import base_report

SAGA = "arn:aws:states:us-east-1:123456789012:execution:OrderSaga"


def failing(report: dict[str, Any]) -> dict[str, str]:
    """The checks that fail on ``report``, with why."""
    return {name: why for name, why in check(report).items() if why}


def test_run_invariant_no_duplicate_side_effects_flags_a_second_shipment() -> None:
    report = base_report()
    report["side_effects"]["duplicate_shipments"] = 1
    assert failing(report) == {"no_duplicate_side_effects": "duplicate side effects: {'duplicate_shipments': 1}"}
    report["side_effects"]["duplicate_shipments"] = 0
    assert failing(report) == {}


def test_run_invariant_duplicate_charge_requests_flags_more_than_the_crashes() -> None:
    report = base_report(faults_injected={"crash": 2})
    report["side_effects"]["duplicate_charge_requests"] = 3
    assert failing(report) == {"duplicate_charge_requests_at_most_crashes": "3 duplicate charge requests > 2 crashes"}
    report["side_effects"]["duplicate_charge_requests"] = 2  # one per crash after the charge: the key dedupes them
    assert failing(report) == {}


def test_run_invariant_every_order_terminal_flags_an_order_in_flight_and_one_lost() -> None:
    stuck = {"o-7": ["failed in ChargePayment: States.Timeout"]}
    report = base_report(orders={"in_flight": 1, "lost": 0}, stuck_orders=stuck)
    why = failing(report)["every_order_terminal_or_rejected"]
    assert why.startswith("1 orders in a non-terminal status") and "o-7" in why
    report = base_report(orders={"in_flight": 0, "lost": 2}, lost_orders=["o-3", "o-4"])
    assert failing(report) == {
        "every_order_terminal_or_rejected": "2 orders neither accepted nor in a DLQ: ['o-3', 'o-4']"
    }
    assert failing(base_report(orders={"in_flight": 0, "lost": 0, "rejected": 3})) == {}


def test_run_invariant_malformed_in_dlq_flags_a_malformed_message_missing() -> None:
    report = base_report(faults_injected={"malformed": 3}, malformed_in_dlq_as_permanent=1, malformed_refused_at_send=1)
    assert failing(report) == {
        "malformed_messages_in_dlq_as_permanent": "1 malformed messages in a DLQ as permanent, 1 refused at send, "
        "3 injected"
    }
    report["malformed_in_dlq_as_permanent"] = 2  # the other two: dead-lettered as permanent, or refused by the API
    assert failing(report) == {}


def test_run_invariant_correlation_id_flags_a_log_line_without_one() -> None:
    lines = [{"level": "INFO", "service": "intake", "correlation_id": "cid-1"}, {"level": "ERROR", "service": "intake"}]
    report = base_report(logs={**log_summary(lines), "lines_over_16_kib": 0})
    assert failing(report) == {"every_log_line_has_correlation_id": "1 log lines without a correlation ID"}
    report = base_report(logs={**log_summary(lines[:1]), "lines_over_16_kib": 0})
    assert failing(report) == {}


def dlq_alarm_states(in_alarm: list[str], depths: dict[str, int]) -> dict[str, Any]:
    """``dlq_alarm_states`` as the run's alarm evaluator writes it, for two DLQs with a depth alarm each."""
    alarms = {
        f"{queue}Depth": {"Dimensions": [{"Name": "QueueName", "Value": queue}], "Period": 60}
        for queue in ("orders-dlq", "intake-dlq")
    }
    return AlarmEvaluator(alarms, {}, LineCapture()).dlq_states(in_alarm, depths)


def test_run_invariant_dlq_alarms_flag_a_silent_dlq_and_a_stale_alarm() -> None:
    silent = dlq_alarm_states([], {"orders-dlq": 2, "intake-dlq": 0})
    assert failing(base_report(dlq_alarm_states=silent)) == {
        "dlq_alarm_in_alarm_exactly_when_dlq_non_empty": "DLQ alarm state disagrees with depth for ['orders-dlq']"
    }
    stale = dlq_alarm_states(["intake-dlqDepth"], {"orders-dlq": 0, "intake-dlq": 0})
    assert (
        "['intake-dlq']"
        in failing(base_report(dlq_alarm_states=stale))["dlq_alarm_in_alarm_exactly_when_dlq_non_empty"]
    )
    agree = dlq_alarm_states(["orders-dlqDepth"], {"orders-dlq": 2, "intake-dlq": 0})
    assert failing(base_report(dlq_alarm_states=agree)) == {}


def test_run_invariant_replay_flags_an_unprocessed_message_and_a_new_duplicate() -> None:
    replay = {"transient_in_dlq": 2, "replayed": 2, "unprocessed": ["o-5"], "new_duplicates": {}}
    assert failing(base_report(replay=replay)) == {
        "replayed_transient_messages_processed_without_duplicates": "replayed messages not processed: ['o-5']"
    }
    replay = {**replay, "unprocessed": [], "new_duplicates": {"duplicate_charges": 1}}
    assert failing(base_report(replay=replay)) == {
        "replayed_transient_messages_processed_without_duplicates": "replay produced duplicates: "
        "{'duplicate_charges': 1}"
    }
    assert failing(base_report(replay={**replay, "new_duplicates": {}})) == {}


def test_run_invariant_unknown_orders_flag_a_success_and_a_side_effect() -> None:
    misplaced = [{"kind": "unknown_order", "order_id": "ghost-1", "ended": "SUCCEEDED, 0 side effects"}]
    succeeded = {"unknown_order": {"injected": 2, "execution_failed": 1, "execution_succeeded": 1, "side_effects": 0}}
    why = failing(base_report(hostile=succeeded, hostile_misplaced=misplaced))
    assert set(why) == {"unknown_order_executions_failed_without_side_effects"}
    assert why["unknown_order_executions_failed_without_side_effects"].startswith(
        "2 unknown-order executions: 1 FAILED"
    )
    assert "ghost-1" in why["unknown_order_executions_failed_without_side_effects"]
    charged = {"unknown_order": {"injected": 2, "execution_failed": 2, "side_effects": 1}}
    assert (
        "1 side effects"
        in failing(base_report(hostile=charged))["unknown_order_executions_failed_without_side_effects"]
    )
    held = {"unknown_order": {"injected": 2, "execution_failed": 2, "side_effects": 0}}
    assert failing(base_report(hostile=held)) == {}


def iam_section(denied: dict[tuple[str, str], int]) -> dict[str, Any]:
    """The report's ``iam``: one function's principal report (what IAM denied it) with its unused grants explained."""
    principal = Principal(
        key="arn:aws:lambda:us-east-1:123456789012:function:ChargePayment",
        kind="function",
        role_id="AROACHARGE",
        role_name="ChargePaymentRole",
        policy=policy_from_documents([]),
    )
    principal.denied.update(denied)
    return explain({"ChargePayment": principal.report()})


def test_run_invariant_no_call_denied_by_iam_flags_a_denied_call() -> None:
    table = "arn:aws:dynamodb:us-east-1:123456789012:table/Orders"
    why = failing(base_report(iam=iam_section({("dynamodb:UpdateItem", table): 2})))
    assert set(why) == {"no_call_denied_by_iam"}
    assert "{'ChargePayment': 2}" in why["no_call_denied_by_iam"]
    assert f"ChargePayment: dynamodb:UpdateItem on {table}" in why["no_call_denied_by_iam"]
    assert failing(base_report(iam=iam_section({}))) == {}


def history(name: str, *states: str, exited: str | None = None, error: str = "States.TaskFailed") -> tuple[str, Any]:
    """A FAILED execution's history: the states it entered, the one it left (if any), its failure."""
    events: list[dict[str, Any]] = [{"type": "ExecutionStarted"}]
    events += [{"type": "TaskStateEntered", "stateEnteredEventDetails": {"name": s}} for s in states]
    if exited:
        events.append({"type": "TaskStateExited", "stateExitedEventDetails": {"name": exited}})
    events.append({"type": "ExecutionFailed", "executionFailedEventDetails": {"error": error, "cause": "x"}})
    return f"{SAGA}:{name}", events


def test_run_invariant_failed_executions_flags_a_failure_neither_parked_nor_refused() -> None:
    parked = history("order-o-1-attempt-1", "MarkNeedsAttention", "NotifyNeedsAttention", exited="NotifyNeedsAttention")
    refused = history("order-o-2-attempt-1", "InputRefused")
    silent = history("order-o-3-attempt-1", "ReserveInventory", "ChargePayment", error="States.Timeout")
    report = base_report(failed_executions=failed_executions([parked, refused, silent]))
    assert failing(report) == {
        "failed_executions_equal_parked_plus_refused": "3 FAILED executions != 1 parked + 1 refused; "
        "e.g. ['order-o-3-attempt-1 (failed in ChargePayment: States.Timeout)']"
    }
    assert failing(base_report(failed_executions=failed_executions([parked, refused]))) == {}


def ledger_op(order_id: str, action: str, status: str) -> dict[str, Any]:
    """A sandbox ledger operation of the order's first attempt."""
    return {"order_id": order_id, "sk": "op", "action": action, "status": status, "idempotency_key": "k"}


def test_run_invariant_terminal_orders_flag_a_compensated_order_still_charged() -> None:
    statuses = {"o-1": {"status": "COMPENSATED"}, "o-2": {"status": "COMPLETED"}}
    completed = [ledger_op("o-2", "charge", "captured"), ledger_op("o-2", "ship", "shipped")]
    charged = [ledger_op("o-1", "charge", "captured"), *completed]
    report = base_report(status_disagreements=status_disagreements(statuses, charged, []))
    why = failing(report)
    assert set(why) == {"no_terminal_order_disagrees_with_its_side_effects"}
    assert why["no_terminal_order_disagrees_with_its_side_effects"].startswith("1 terminal orders whose side effects")
    assert "o-1: COMPENSATED" in why["no_terminal_order_disagrees_with_its_side_effects"]
    refunded = [*charged, ledger_op("o-1", "refund", "refunded")]
    assert failing(base_report(status_disagreements=status_disagreements(statuses, refunded, []))) == {}
