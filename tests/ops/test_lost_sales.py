"""harness.lost_sales: valid orders cancelled or parked, with their cause, and --check's verdict on them."""

from __future__ import annotations

import random
from typing import Any

from harness.invariants import CHECKS
from harness.lost_sales import INVARIANT, lost_sales
from harness.orders import make_order

OK = make_order("order-1-00000", random.Random(1))
DECLINED = make_order("order-1-00001", random.Random(1), "declined")
SUBMITTED: list[tuple[dict[str, Any], str | None]] = [(OK, "cid-a"), (DECLINED, "cid-b")]


def _history(order_id: str, state: str, error: str, attempt: int = 1) -> tuple[str, list[dict[str, Any]]]:
    arn = f"arn:aws:states:us-east-1:123456789012:execution:saga:order-{order_id}-attempt-{attempt}"
    return arn, [
        {"type": "ExecutionStarted"},
        {"type": "TaskStateEntered", "stateEnteredEventDetails": {"name": state}},
        {"type": "LambdaFunctionFailed", "lambdaFunctionFailedEventDetails": {"error": error, "cause": "x"}},
        {"type": "TaskStateEntered", "stateEnteredEventDetails": {"name": "ReleaseInventory"}},
        {"type": "ExecutionSucceeded"},
    ]


def _details(ok: str, declined: str = "COMPENSATED") -> list[dict[str, Any]]:
    return [
        {"order_id": OK["order_id"], "status": ok, "correlation_id": "cid-a"},
        {"order_id": DECLINED["order_id"], "status": declined, "correlation_id": "cid-b"},
    ]


def _page(delivered: bool = True, kind: str = "function_throttled") -> dict[str, Any]:
    return {"alarm": "IntakeThrottles", "kind": kind, "at": 60.0, "delivered": delivered}


def test_lost_sales_throttled_valid_order_unpaged_fails_check() -> None:
    histories = [
        _history(OK["order_id"], "ReserveInventory", "Lambda.TooManyRequestsException"),
        _history(DECLINED["order_id"], "ChargePayment", "PaymentDeclined"),
    ]
    section = lost_sales(SUBMITTED, _details("COMPENSATED"), histories, pages=[])
    assert (section["valid"], section["lost"], section["infrastructure"], section["unpaged"]) == (1, 1, 1, 1)
    (lost,) = section["orders"]
    assert lost["order_id"] == OK["order_id"] and lost["status"] == "COMPENSATED"
    assert lost["cause"] == "infrastructure" and lost["error"] == "Lambda.TooManyRequestsException"
    assert lost["state"] == "ReserveInventory" and lost["paged"] is False
    why = CHECKS[INVARIANT]({"lost_sales": section})
    assert why is not None and OK["order_id"] in why and "Lambda.TooManyRequestsException" in why


def test_lost_sales_paged_is_counted_but_holds() -> None:
    histories = [_history(OK["order_id"], "ChargePayment", "Sandbox.Timedout")]
    section = lost_sales(SUBMITTED, _details("NEEDS_ATTENTION"), histories, pages=[_page()])
    assert (section["lost"], section["infrastructure"], section["unpaged"]) == (1, 1, 0)
    assert section["orders"][0]["paged"] is True and section["paged_by"] == ["IntakeThrottles"]
    assert CHECKS[INVARIANT]({"lost_sales": section}) is None


def test_lost_sales_undelivered_page_pages_nobody() -> None:
    histories = [_history(OK["order_id"], "ShipOrder", "States.Timeout")]
    section = lost_sales(SUBMITTED, _details("COMPENSATED"), histories, pages=[_page(delivered=False)])
    assert section["unpaged"] == 1 and CHECKS[INVARIANT]({"lost_sales": section})


def test_lost_sales_dlq_page_announces_no_lost_order() -> None:
    histories = [_history(OK["order_id"], "ShipOrder", "Sandbox.Timedout")]
    section = lost_sales(SUBMITTED, _details("COMPENSATED"), histories, pages=[_page(kind="dlq")])
    assert section["unpaged"] == 1 and section["paged_by"] == []


def test_lost_sales_business_outcomes_and_completed_orders_are_no_lost_sale() -> None:
    histories = [_history(DECLINED["order_id"], "ChargePayment", "PaymentDeclined")]
    section = lost_sales(SUBMITTED, _details("COMPLETED"), histories, pages=[])
    assert (section["valid"], section["lost"]) == (1, 0)
    assert CHECKS[INVARIANT]({"lost_sales": section}) is None


def test_lost_sales_operator_compensation_is_reported_not_a_violation() -> None:
    histories = [_history(OK["order_id"], "ReserveInventory", "CompensationRequested", attempt=1)]
    section = lost_sales(SUBMITTED, _details("COMPENSATED"), histories, pages=[])
    assert section["lost"] == 1 and section["orders"][0]["cause"] == "operator"
    assert section["infrastructure"] == 0 and CHECKS[INVARIANT]({"lost_sales": section}) is None


def test_lost_sales_without_a_history_is_an_unexplained_violation() -> None:
    section = lost_sales(SUBMITTED, _details("NEEDS_ATTENTION"), [], pages=[])
    assert section["orders"][0]["cause"] == "unknown" and section["unpaged"] == 1
    assert CHECKS[INVARIANT]({"lost_sales": section})


def test_lost_sales_invariant_holds_on_a_report_without_the_section() -> None:
    assert CHECKS[INVARIANT]({}) is None


def test_lost_sales_spike_check_refuses_a_lost_sale() -> None:
    from harness.spike import check_spike

    histories = [_history(OK["order_id"], "ChargePayment", "Lambda.TooManyRequestsException")]
    report: dict[str, Any] = {
        "not_terminal": [],
        "orders": {"in_flight": 0, "failed": 0},
        "valid_orders_dead_lettered": 0,
        "side_effects": {"duplicate_charges": 0},
        "lost_sales": lost_sales(SUBMITTED, _details("COMPLETED"), histories, pages=[]),
    }
    assert check_spike(report) == []
    report["lost_sales"] = lost_sales(SUBMITTED, _details("COMPENSATED"), histories, pages=[])
    (problem,) = check_spike(report)
    assert "1 valid orders lost" in problem and OK["order_id"] in problem


def test_lost_sales_matrix_cells_counted_by_fault() -> None:
    from harness.lost_sales import matrix_lost_sales

    cells = [
        {"fault": "Lambda.TooManyRequestsException", "status": "COMPENSATED", "order_id": "o-1", "row": "ShipOrder"},
        {"fault": "Lambda.TooManyRequestsException", "status": "COMPLETED", "order_id": "o-2", "row": "ShipOrder"},
        {"fault": "States.Timeout", "status": "NEEDS_ATTENTION", "order_id": "o-3", "row": "MarkCompleted"},
    ]
    section = matrix_lost_sales(cells, in_alarm=["OrderPipeline-dev-ShipOrderErrors"])
    assert (section["valid"], section["lost"]) == (3, 2)
    assert section["by_fault"] == {"Lambda.TooManyRequestsException": 1, "States.Timeout": 1}
    assert section["alarms_in_alarm"] == 1


def test_lost_sales_queue_consumer_page_announces_no_lost_order() -> None:
    """A throttled or failing intake holds its messages in the queue (SQS redelivers them): its page says
    nothing about an order the saga cancelled."""
    from harness.lost_sales import consumer_alarms

    alarms: dict[str, dict[str, Any]] = {
        "IntakeThrottles": {"MetricName": "Throttles", "Dimensions": [{"Name": "FunctionName", "Value": "intake"}]},
        "ChargeErrors": {
            "Metrics": [
                {"Id": "e", "MetricStat": {"Metric": {"Dimensions": [{"Name": "FunctionName", "Value": "charge"}]}}}
            ]
        },
    }
    assert consumer_alarms(alarms, {"intake"}) == {"IntakeThrottles"}
    histories = [_history(OK["order_id"], "ReserveInventory", "Lambda.TooManyRequestsException")]
    pages = [_page()]
    section = lost_sales(
        SUBMITTED, _details("COMPENSATED"), histories, pages, ignored=consumer_alarms(alarms, {"intake"})
    )
    assert section["unpaged"] == 1 and section["paged_by"] == []
    assert CHECKS[INVARIANT]({"lost_sales": section})
