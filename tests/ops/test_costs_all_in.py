"""The whole bill (harness.reporting.costs_all_in): every line item from the run's counts, the levers' effect."""

from __future__ import annotations

import json
from typing import Any

from harness.reporting.costs_all_in import BEFORE, CHOSEN, WARN_APP_LOGS, Levers, all_in

_EMF = json.dumps(
    {
        "_aws": {
            "Timestamp": 1,
            "CloudWatchMetrics": [
                {"Namespace": "OrderPipeline", "Dimensions": [["service"]], "Metrics": [{"Name": "A"}, {"Name": "B"}]}
            ],
        },
        "service": "intake",
        "A": 1,
        "B": 1,
    }
)
_LOG = json.dumps({"level": "INFO", "message": "order accepted", "correlation_id": "cid-1", "service": "intake"})


def _history(failed: bool) -> tuple[str, list[dict[str, Any]]]:
    data = {"input": json.dumps({"order_id": "o-1", "padding": "x" * 800}), "name": "ChargePayment"}
    events: list[dict[str, Any]] = [
        {"type": "ExecutionStarted", "executionStartedEventDetails": data},
        {"type": "TaskStateEntered", "stateEnteredEventDetails": data},
        {"type": "TaskStateExited", "stateExitedEventDetails": {"output": "x" * 800, "name": "ChargePayment"}},
    ]
    if failed:
        events.append({"type": "ExecutionFailed", "executionFailedEventDetails": {"error": "E", "cause": "c"}})
    return ("arn:exec", events)


def _bill(levers: Levers, **overrides: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "pipeline_usd": 100.0,
        "orders": 2,
        "lambda_invocations": 8,
        "log_lines": [_LOG, _EMF, _LOG, _EMF],
        "histories": [_history(False), _history(True)],
        "operations": {"secretsmanager:GetSecretValue": 1},
        "levers": levers,
    }
    return all_in(**{**args, **overrides})


def test_all_in_every_line_item_is_priced_and_summed() -> None:
    bill = _bill(CHOSEN)

    assert set(bill["items"]) == {
        "pipeline",
        "api_gateway_rest",
        "logs_functions",
        "logs_state_machine",
        "custom_metrics",
        "traces",
        "kms",
        "secrets_manager",
    }
    assert bill["usd_per_million_orders"] == round(sum(bill["items"].values()), 2)
    assert bill["items"]["api_gateway_rest"] == 3.5
    assert bill["metric_series"] == 2  # OrderPipeline/A and /B for service=intake
    assert bill["per_order"]["function_log_events"] == (4 + 2 * 8) / 2  # lines + START and REPORT per invocation


def test_all_in_error_level_logs_only_the_failed_executions_events_without_data() -> None:
    chosen, before = _bill(CHOSEN), _bill(BEFORE)

    assert chosen["per_order"]["state_machine_log_events"] == 0.5  # one ExecutionFailed over two orders
    assert before["per_order"]["state_machine_log_events"] == 3.5
    assert before["per_order"]["state_machine_log_bytes"] > 10 * chosen["per_order"]["state_machine_log_bytes"]


def test_all_in_levers_move_traces_and_platform_records() -> None:
    chosen, before = _bill(CHOSEN), _bill(BEFORE)

    assert before["items"]["traces"] == 5.25  # every W3C trace, X-Ray's own segments at 5% in a second one
    # One trace per order, 5% sampled at the edge; X-Ray's default rule still records its own segments of
    # 5% of the others (0.0475), and its reservoir (1 trace a second, $12.96 a month) spread over 10 M orders.
    assert chosen["per_order"]["traces"] == 0.0975
    assert chosen["items"]["traces"] == round(0.0975 * 5 + 12.96 / 10, 2) == 1.78
    assert before["per_order"]["function_log_events"] == 2  # WARN: no START / REPORT records
    assert before["items"]["logs_state_machine"] > chosen["items"]["logs_state_machine"]


def test_all_in_retention_multiplies_storage_only() -> None:
    month, year = _bill(Levers(retention_months=1)), _bill(Levers(retention_months=12))

    assert year["items"]["logs_functions"] > month["items"]["logs_functions"]
    assert year["items"]["api_gateway_rest"] == month["items"]["api_gateway_rest"]


def test_all_in_warn_application_logs_drop_info_lines_and_keep_emf_and_warnings() -> None:
    warning = json.dumps({"level": "WARNING", "message": "provider slow", "service": "charge"})
    lines = [_LOG, _EMF, warning, _LOG, _EMF]
    info, warn = _bill(CHOSEN, log_lines=lines), _bill(WARN_APP_LOGS, log_lines=lines)

    assert info["per_order"]["function_log_events"] - warn["per_order"]["function_log_events"] == 1  # 2 INFO / 2 orders
    assert warn["metric_series"] == info["metric_series"]  # EMF documents are kept: metrics unchanged
    assert warn["items"]["logs_functions"] < info["items"]["logs_functions"]


def test_billed_transitions_count_each_retry_as_a_transition() -> None:
    """AWS bills "each retry ... as an additional state transition" (https://aws.amazon.com/step-functions/pricing/):
    a task state entered once and attempted three times is three transitions, not one."""
    from local_cloud.histories import billed_transitions_per_execution

    def entered(kind: str = "TaskStateEntered") -> dict[str, Any]:
        return {"type": kind}

    retried = [
        {"type": "ExecutionStarted"},
        entered(),
        {"type": "LambdaFunctionScheduled"},
        {"type": "LambdaFunctionFailed"},
        {"type": "LambdaFunctionScheduled"},
        {"type": "LambdaFunctionFailed"},
        {"type": "LambdaFunctionScheduled"},
        {"type": "LambdaFunctionSucceeded"},
        {"type": "TaskStateExited"},
        entered(),
        {"type": "TaskScheduled"},
        {"type": "TaskSucceeded"},
        {"type": "TaskStateExited"},
        entered("FailStateEntered"),
    ]
    straight = [{"type": "ExecutionStarted"}, entered(), {"type": "LambdaFunctionScheduled"}]

    assert billed_transitions_per_execution([("a", retried), ("b", straight)]) == (5 + 1) / 2
    # moto's in-process histories hold the event types as enums (str() is "HistoryEventType.<name>").
    from moto.stepfunctions.parser.api import HistoryEventType

    as_enums = [{"type": HistoryEventType(e["type"])} for e in retried]
    assert billed_transitions_per_execution([("a", as_enums)]) == 5


def test_line_capture_keeps_a_provider_stand_ins_lines_out_of_the_pipelines_lines() -> None:
    """The sandbox providers are not deployed in prod (real processors are someone else's bill): their
    log lines are captured (PII scans read every line) but not billed as the functions' logs."""
    from local_cloud.calls import outside_the_pipeline
    from local_cloud.capture import LineCapture

    capture = LineCapture()
    capture.write(_LOG + "\n")
    with outside_the_pipeline():
        capture.write('{"service": "sandbox-payment"}\n')

    assert capture.lines == [_LOG, '{"service": "sandbox-payment"}']
    assert capture.pipeline_lines == [_LOG]


def test_all_in_infrequent_access_halves_the_state_machine_logs_ingestion() -> None:
    """Infrequent Access: $0.25 per GB ingested instead of $0.50, storage unchanged
    (https://aws.amazon.com/cloudwatch/pricing/)."""
    everything = Levers(saga_log_level="ALL", saga_execution_data=True, retention_months=0.0)
    standard = _bill(everything)["items"]["logs_state_machine"]
    infrequent = _bill(Levers(**{**vars(everything), "saga_log_class": "INFREQUENT_ACCESS"}))
    assert standard > 0.1 and abs(infrequent["items"]["logs_state_machine"] - standard / 2) <= 0.01
    assert CHOSEN.saga_log_class == "INFREQUENT_ACCESS" and BEFORE.saga_log_class == "STANDARD"
