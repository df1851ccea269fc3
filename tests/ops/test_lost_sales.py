"""harness.reporting.lost_sales: valid orders cancelled or parked, with their cause, and --check's verdict on them."""

from __future__ import annotations

import random
from typing import Any

from harness.reporting.invariants import CHECKS
from harness.reporting.lost_sales import INVARIANT, lost_sales
from harness.workload.orders import make_order

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
    page = {**_page(kind="needs_attention"), "alarm": "ParkedOrders"}
    section = lost_sales(SUBMITTED, _details("NEEDS_ATTENTION"), histories, pages=[page])
    assert (section["lost"], section["infrastructure"], section["unpaged"]) == (1, 1, 0)
    assert section["orders"][0]["paged"] is True and section["paged_by"] == ["ParkedOrders"]
    assert CHECKS[INVARIANT]({"lost_sales": section}) is None


def test_lost_sales_parked_order_paged_only_by_a_park_page_after_it_was_parked() -> None:
    """Per order, not per run: another incident's page (an intake throttle) or a park page of an earlier
    incident (its alarm back to OK since) does not announce this order; one after its park does, and so does
    a park alarm still in ALARM from an earlier park (its incident is open when this order parks)."""
    histories = [_history(OK["order_id"], "ChargePayment", "Lambda.TooManyRequestsException")]
    parked = _details("NEEDS_ATTENTION")
    parked[0]["updated_at"] = "1970-01-01T00:01:40Z"  # parked at 100 s
    park_page = {**_page(kind="needs_attention"), "alarm": "ParkedOrders"}
    other_incident = lost_sales(SUBMITTED, parked, histories, pages=[_page(), park_page])  # both at 60 s
    assert other_incident["unpaged"] == 1 and CHECKS[INVARIANT]({"lost_sales": other_incident})
    after = lost_sales(SUBMITTED, parked, histories, pages=[{**park_page, "at": 100.0}])
    assert after["unpaged"] == 0 and after["orders"][0]["paged_by"] == ["ParkedOrders"]
    still_open = lost_sales(SUBMITTED, parked, histories, pages=[park_page], in_alarm=["ParkedOrders"])
    assert still_open["unpaged"] == 0


def test_lost_sales_compensated_order_paged_only_by_an_alarm_on_its_failing_function() -> None:
    """A compensated order's incident is its failing step: a page of that step's function (or of the saga's
    executions) during the order's life names it; a page of another function, or before the order, does not."""
    arn, events = _history(OK["order_id"], "ChargePayment", "Sandbox.Timedout")
    scheduled = {"type": "TaskScheduled", "taskScheduledEventDetails": {"parameters": '{"FunctionName": "charge"}'}}
    events.insert(2, scheduled)
    alarms: dict[str, dict[str, Any]] = {
        name: {"MetricName": "Errors", "Dimensions": [{"Name": "FunctionName", "Value": fn}]}
        for name, fn in (("ShipErrors", "ship"), ("ChargeErrors", "charge"))
    }
    ship, charge = ({**_page(kind="function"), "alarm": name} for name in ("ShipErrors", "ChargeErrors"))
    details = _details("COMPENSATED")
    details[0]["created_at"] = "1970-01-01T00:00:50Z"  # received at 50 s; the pages are at 60 s
    other = lost_sales(SUBMITTED, details, [(arn, events)], [ship], alarms=alarms)
    assert other["unpaged"] == 1
    named = lost_sales(SUBMITTED, details, [(arn, events)], [ship, charge], alarms=alarms)
    assert named["unpaged"] == 0 and named["orders"][0]["paged_by"] == ["ChargeErrors"]
    before = lost_sales(SUBMITTED, details, [(arn, events)], [{**charge, "at": 40.0}], alarms=alarms)
    assert before["unpaged"] == 1
    # A park page announces parked orders, never this compensated one (no function on it, all the same).
    park = {**_page(kind="needs_attention"), "alarm": "NeedsAttentionArrivals"}
    assert lost_sales(SUBMITTED, details, [(arn, events)], [park], alarms=alarms)["unpaged"] == 1


def test_lost_sales_compensated_order_is_not_paged_by_failed_executions() -> None:
    """A compensated execution SUCCEEDED: ``ExecutionsFailed`` (an alarm on no function) never counted it, so its
    page announces some other order; a provider outage's page (also on no function) does name the incident."""
    arn, events = _history(OK["order_id"], "ChargePayment", "TransientStepError")
    details = _details("COMPENSATED")
    failed = {**_page(kind="executions_failed"), "alarm": "ExecutionsFailed"}
    section = lost_sales(SUBMITTED, details, [(arn, events)], [failed], alarms={"ExecutionsFailed": {}})
    assert section["unpaged"] == 1 and CHECKS[INVARIANT]({"lost_sales": section})
    outage = {**_page(kind="provider_outage"), "alarm": "PaymentOutage"}
    section = lost_sales(SUBMITTED, details, [(arn, events)], [outage], alarms={"PaymentOutage": {}})
    assert section["unpaged"] == 0


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


def test_lost_sales_execution_stopped_by_an_operator_is_the_operators_call() -> None:
    """An execution ends ABORTED only by StopExecution (an operator's or a tool's): the parked order that follows
    is the operator's call, whatever task error the execution retried before the stop."""
    arn, events = _history(OK["order_id"], "ReserveInventory", "TransientStepError")
    events[-1] = {"type": "ExecutionAborted"}
    section = lost_sales(SUBMITTED, _details("NEEDS_ATTENTION"), [(arn, events)], pages=[])
    (lost,) = section["orders"]
    assert (lost["cause"], lost["error"]) == ("operator", "ExecutionAborted")
    assert section["infrastructure"] == 0 and CHECKS[INVARIANT]({"lost_sales": section}) is None


def test_lost_sales_without_a_history_is_an_unexplained_violation() -> None:
    section = lost_sales(SUBMITTED, _details("NEEDS_ATTENTION"), [], pages=[])
    assert section["orders"][0]["cause"] == "unknown" and section["unpaged"] == 1
    assert CHECKS[INVARIANT]({"lost_sales": section})


def test_lost_sales_invariant_holds_on_a_report_without_the_section() -> None:
    assert CHECKS[INVARIANT]({}) is None


def test_lost_sales_spike_check_refuses_a_lost_sale() -> None:
    from harness.spike.spike import check_spike

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


def test_lost_sales_business_outcome_injected_on_a_valid_order_is_no_violation() -> None:
    """The fault matrix injects business outcomes (a decline, a carrier's rejection) on valid orders: reported
    with that cause, never a violation (the provider decided, not our infrastructure)."""
    histories = [_history(OK["order_id"], "ChargePayment", "PaymentDeclined")]
    section = lost_sales(SUBMITTED, _details("COMPENSATED"), histories, pages=[])
    assert section["lost"] == 1 and section["orders"][0]["cause"] == "business"
    assert section["unpaged"] == 0 and CHECKS[INVARIANT]({"lost_sales": section}) is None


def test_lost_sales_fault_matrix_route_is_a_cells_setup_not_a_loss() -> None:
    """``FaultMatrix.Route``: the matrix's lever to take a wildcard catch (to reach a compensation's fault cell),
    injected like a business outcome on a valid order: no loss of ours, no page expected."""
    from harness.faults.cells import ROUTE_ERROR

    histories = [_history(OK["order_id"], "ShipOrder", ROUTE_ERROR)]
    section = lost_sales(SUBMITTED, _details("COMPENSATED"), histories, pages=[])
    assert section["orders"][0]["cause"] == "business" and section["unpaged"] == 0


def test_lost_sales_fault_matrix_fails_on_an_unpaged_lost_sale(monkeypatch: Any, capsys: Any) -> None:
    """``make faults`` fails on a lost sale nobody was paged for, even with every cell's outcome judged sound."""
    import harness.matrix.fault_matrix as matrix

    histories = [_history(OK["order_id"], "ShipOrder", "Lambda.ServiceException")]
    section = lost_sales(SUBMITTED, _details("COMPENSATED"), histories, pages=[])
    report = {"cells": [], "violations": 0, "lost_sales": section, "seconds": {"total": 1, "deploy": 1}}
    monkeypatch.setattr(matrix, "run_matrix", lambda options: report)
    assert matrix.main(matrix.MatrixOptions(), as_json=False) == 1
    out = capsys.readouterr().out
    assert "lost sales: 1 of 1 valid orders (1 to our infrastructure, 1 nobody was paged for)" in out
    report["lost_sales"] = lost_sales(SUBMITTED, _details("COMPLETED"), histories, pages=[])
    assert matrix.main(matrix.MatrixOptions(), as_json=False) == 0


def test_lost_sales_queue_consumer_page_announces_no_lost_order() -> None:
    """A throttled or failing intake holds its messages in the queue (SQS redelivers them): its page says
    nothing about an order the saga cancelled."""
    from harness.reporting.lost_sales import consumer_alarms

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


def test_lost_sales_spike_prints_its_lost_sales_line(monkeypatch: Any, capsys: Any) -> None:
    """``make spike`` (``--json --check``) says ``lost sales: N`` beside its JSON, and fails on an unpaged one."""
    import harness.spike.spike
    from harness.cli import main

    histories = [_history(OK["order_id"], "ChargePayment", "Sandbox.Timedout")]
    section = lost_sales(SUBMITTED, _details("COMPENSATED"), histories, pages=[])
    report = {"lost_sales": section, "check_problems": ["1 valid orders lost and nobody paged"], "series": []}
    monkeypatch.setattr(harness.spike.spike, "run_spike", lambda options: report)
    assert main(["local", "spike", "--json", "--check", "--no-plot"]) == 1
    err = capsys.readouterr().err
    assert "lost sales: 1 of 1 valid orders (1 to our infrastructure, 1 nobody was paged for)" in err


def test_lost_sales_another_actors_move_is_that_actors_call_not_a_loss_of_ours() -> None:
    """``StaleAttempt``, ``OrderMovedOn``, ``InvalidTransition``: another actor (a newer attempt, an operator, the
    sweeper) moved the order under this execution, whose compensations then undo its own attempt (decision 0028):
    reported with that cause, never a violation of its own; the fault matrix injects them to reach CancelShipment."""
    for error in ("StaleAttempt", "OrderMovedOn", "InvalidTransition"):
        histories = [_history(OK["order_id"], "ShipOrder", error)]
        section = lost_sales(SUBMITTED, _details("COMPENSATED"), histories, pages=[])
        assert section["orders"][0]["cause"] == "another_actor", error
        assert section["unpaged"] == 0 and CHECKS[INVARIANT]({"lost_sales": section}) is None


def test_lost_sales_invalid_order_is_the_orders_own_content() -> None:
    histories = [_history(OK["order_id"], "ReserveInventory", "InvalidOrder")]
    section = lost_sales(SUBMITTED, _details("COMPENSATED"), histories, pages=[])
    assert section["orders"][0]["cause"] == "business" and section["unpaged"] == 0
