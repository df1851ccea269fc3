"""The fault matrix's cell generation (from an ASL definition) and its classification of an order's end."""

from __future__ import annotations

from typing import Any

from harness.faults.cells import (
    DYNAMODB_FAULTS,
    LAMBDA_SERVICE_FAULTS,
    ROUTE_ERROR,
    OrderFacts,
    classify,
    generate_cells,
    render,
    route_to,
    task_states,
)
from harness.faults.inject import find_order_id, provider_call
from harness.faults.random_faults import RandomFaults
from harness.reporting.saga_checks import failed_executions, status_disagreements

LAMBDA = "arn:aws:lambda:us-east-1:123456789012:function:"
FORWARD_RETRY = [
    {"ErrorEquals": ["TransientStepError", "Lambda.ServiceException", "Sandbox.Timedout"], "MaxAttempts": 3}
]
DDB_RETRY = [{"ErrorEquals": ["DynamoDB.ThrottlingException"], "MaxAttempts": 2}]


def saga() -> dict[str, Any]:
    """A small saga shaped like ours: Reserve -> Charge -> MarkCompleted; compensations; a park."""
    return {
        "StartAt": "Reserve",
        "States": {
            "Reserve": {
                "Type": "Task",
                "Resource": LAMBDA + "reserve",
                "Next": "ChargePayment",
                "Retry": FORWARD_RETRY,
                "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Release"}],
            },
            "ChargePayment": {
                "Type": "Task",
                "Resource": LAMBDA + "charge",
                "Next": "MarkCompleted",
                "Retry": FORWARD_RETRY,
                "Catch": [
                    {"ErrorEquals": ["PaymentDeclined"], "Next": "Release"},
                    {"ErrorEquals": ["States.ALL"], "Next": "RefundPayment"},
                ],
            },
            "MarkCompleted": {
                "Type": "Task",
                "Resource": "arn:aws:states:::dynamodb:updateItem",
                "End": True,
                "Retry": DDB_RETRY,
            },
            "RefundPayment": {
                "Type": "Task",
                "Resource": LAMBDA + "refund",
                "Next": "Release",
                "Retry": [{"ErrorEquals": ["States.ALL"], "MaxAttempts": 5}],
                "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "MarkNeedsAttention"}],
            },
            "Release": {"Type": "Task", "Resource": LAMBDA + "release", "End": True},
            "MarkNeedsAttention": {"Type": "Task", "Resource": LAMBDA + "finalize", "Next": "Failed"},
            "Failed": {"Type": "Fail"},
        },
    }


def test_task_states_lists_each_task_with_its_integration() -> None:
    states = task_states(saga())
    assert list(states) == [
        "Reserve",
        "ChargePayment",
        "MarkCompleted",
        "RefundPayment",
        "Release",
        "MarkNeedsAttention",
    ]
    assert states["MarkCompleted"].integration == "dynamodb"
    assert states["ChargePayment"].integration == "lambda"
    assert states["ChargePayment"].business_errors() == ["TransientStepError", "PaymentDeclined"]


def test_retries_for_states_all_skips_the_errors_it_cannot_catch() -> None:
    refund = task_states(saga())["RefundPayment"]
    assert refund.retries_for("Lambda.Unknown") == 5
    assert refund.retries_for("States.Runtime") == 0
    assert refund.catcher_for("States.Runtime") is None


def test_route_to_prefers_the_path_where_most_steps_really_ran() -> None:
    states = task_states(saga())
    assert route_to(states, "Reserve", "ChargePayment") == []
    refund_route = route_to(states, "Reserve", "RefundPayment")
    assert refund_route is not None
    assert [(r.state, r.error) for r in refund_route] == [("ChargePayment", ROUTE_ERROR)]
    release_route = route_to(states, "Reserve", "Release")
    assert release_route is not None and [(r.state, r.error) for r in release_route] == [("ChargePayment", ROUTE_ERROR)]
    park_route = route_to(states, "Reserve", "MarkNeedsAttention")
    assert park_route is not None and [r.state for r in park_route] == ["ChargePayment", "RefundPayment"]


def test_generate_cells_covers_each_documented_fault_in_three_persistences() -> None:
    cells = {c.key: c for c in generate_cells(saga())}
    for fault in LAMBDA_SERVICE_FAULTS:
        assert f"ChargePayment|{fault}|once" in cells and f"ChargePayment|{fault}|forever" in cells
    for fault in DYNAMODB_FAULTS:
        assert f"MarkCompleted|{fault}|once" in cells
    # "retries" only where a retrier takes the error, failing exactly MaxAttempts attempts
    assert cells["MarkCompleted|DynamoDB.ThrottlingException|retries"].rules[-1].count == 2
    assert "MarkCompleted|DynamoDB.ValidationException|retries" not in cells
    assert cells["RefundPayment|Lambda.Unknown|retries"].rules[-1].count == 5
    assert "RefundPayment|States.Runtime|retries" not in cells
    # the effect happened before an unknown-outcome error
    assert cells["ChargePayment|Lambda.Unknown|once"].rules[-1].timing == "after"
    assert cells["ChargePayment|Lambda.ServiceException|once"].rules[-1].timing == "before"
    # the route to the cell's state comes first
    assert [r.state for r in cells["RefundPayment|Lambda.Unknown|once"].rules] == ["ChargePayment", "RefundPayment"]


def test_generate_cells_adds_stops_timeouts_crashes_ambiguity_and_repairs() -> None:
    keys = {c.key for c in generate_cells(saga())}
    assert {"ChargePayment|StopExecution|once", "MarkCompleted|execution-timeout|once"} <= keys
    assert "ChargePayment|crash-before-marker|forever" in keys and "MarkCompleted|crash-before-marker|once" not in keys
    assert "ChargePayment|ambiguous-charge-read_timeout|once" in keys
    assert "RefundPayment|ambiguous-refund-connection_reset|forever" in keys
    assert not any("ambiguous-ship" in k for k in keys)  # no ShipOrder state in this definition
    repairs = {k for k in keys if k.startswith("repair@")}
    assert {
        "repair@completed|redrive|once",
        "repair@parked|compensate|once",
        "repair@stop@ChargePayment|redrive|once",
    } <= repairs
    setup = next(c for c in generate_cells(saga()) if c.key == "repair@parked|redrive|once")
    assert all(r.first_execution_only for r in setup.rules)


def facts(**kwargs: Any) -> OrderFacts:
    return OrderFacts(order_id="o-1", **kwargs)


def test_classify_completed_needs_one_capture_and_one_live_shipment() -> None:
    assert classify(facts(status="COMPLETED", captures=1, live_shipments=1, reserved=True))[0] == "COMPLETED"
    outcome, problems = classify(facts(status="COMPLETED", captures=0, live_shipments=1))
    assert outcome == "VIOLATION" and "COMPLETED but captures=0" in problems[0]


def test_classify_compensated_needs_the_money_back_stock_released_and_no_shipment() -> None:
    assert classify(facts(status="COMPENSATED", captures=1, refunds=1, released=True))[0] == "COMPENSATED"
    assert classify(facts(status="COMPENSATED"))[0] == "COMPENSATED"  # nothing moved
    assert classify(facts(status="COMPENSATED", captures=1, refunds=1, live_shipments=1))[0] == "VIOLATION"
    assert classify(facts(status="COMPENSATED", captures=1))[0] == "VIOLATION"
    assert classify(facts(status="COMPENSATED", reserved=True))[0] == "VIOLATION"


def test_classify_needs_attention_needs_a_message_and_the_alarm() -> None:
    parked = facts(status="NEEDS_ATTENTION", captures=1, attention_messages=1, attention_alarm=True)
    assert classify(parked)[0] == "NEEDS_ATTENTION"
    silent = facts(status="NEEDS_ATTENTION", captures=1)
    assert classify(silent)[0] == "VIOLATION"
    unalarmed = facts(status="COMPENSATING", attention_messages=1, attention_alarm=False)
    outcome, problems = classify(unalarmed)
    assert outcome == "VIOLATION" and "alarm" in problems[0]


def test_classify_a_stuck_order_names_its_status_and_executions() -> None:
    outcome, problems = classify(facts(status="SHIPPED", captures=1, live_shipments=1, executions={"FAILED": 1}))
    assert outcome == "VIOLATION"
    assert problems == ["status SHIPPED and nothing on the needs-attention queue", "executions FAILED=1"]


def test_classify_a_double_capture_is_a_violation_even_when_announced() -> None:
    twice = facts(status="NEEDS_ATTENTION", captures=2, attention_messages=1, attention_alarm=True)
    assert classify(twice) == ("VIOLATION", ["2 captures"])


def test_render_prints_each_cell_and_the_totals() -> None:
    results = [
        {
            "row": "Charge",
            "fault": "Lambda.Unknown",
            "persistence": "once",
            "order_id": "a",
            "outcome": "COMPLETED",
            "problems": [],
        },
        {
            "row": "Charge",
            "fault": "Lambda.Unknown",
            "persistence": "forever",
            "order_id": "b",
            "outcome": "VIOLATION",
            "problems": ["x"],
        },
    ]
    text = render(results)
    assert "Lambda.Unknown/once" in text and "2 cells: COMPLETED 1, VIOLATION 1" in text
    assert "VIOLATION Charge Lambda.Unknown/forever (b): x" in text


def test_find_order_id_reads_state_inputs_and_idempotency_payloads() -> None:
    assert find_order_id({"order_id": "o-1"}) == "o-1"
    assert find_order_id({"Payload": {"detail": {"order_id": "o-2"}}}) == "o-2"
    assert find_order_id({"x": 1}) is None


def test_provider_call_names_the_action_and_order_of_state_changing_requests() -> None:
    assert provider_call("POST", "/payment/charges", b'{"order_id": "o-1"}') == ("charge", "o-1")
    assert provider_call("POST", "http://127.0.0.1:1/carrier/shipments", '{"order_id": "o-2"}') == ("ship", "o-2")
    assert provider_call("POST", "/carrier/shipments/o-3%23ship-order%23attempt-1/cancel", b"{}") == ("cancel", "o-3")
    assert provider_call("GET", "/payment/charges/o-1%23charge-payment%23attempt-1", None) == (None, None)


def _history(*events: tuple[str, str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for kind, name in events:
        if kind == "in":
            out.append({"type": "TaskStateEntered", "stateEnteredEventDetails": {"name": name}})
        elif kind == "out":
            out.append({"type": "TaskStateExited", "stateExitedEventDetails": {"name": name}})
        else:
            out.append({"type": kind})
    return out


def _failed(error: str) -> dict[str, Any]:
    # The cause (it may quote the state's input) is never copied into the report: only the error's name.
    return {"type": "ExecutionFailed", "executionFailedEventDetails": {"error": error, "cause": "input: Ann"}}


def test_failed_executions_counts_parked_and_refused_and_names_the_others() -> None:
    histories = [
        ("arn:x:park", _history(("in", "MarkNeedsAttention"), ("out", "MarkNeedsAttention"), ("ExecutionFailed", ""))),
        ("arn:x:refused", _history(("in", "ReserveInventory"), ("in", "InputRefused"), ("ExecutionFailed", ""))),
        ("arn:x:silent", [*_history(("in", "MarkCompleted")), _failed("States.Runtime")]),
        ("arn:x:park-failed", _history(("in", "MarkNeedsAttention"), ("ExecutionFailed", ""))),
        ("arn:x:ok", _history(("in", "MarkCompleted"), ("ExecutionSucceeded", ""))),
    ]  # fmt: skip
    assert failed_executions(histories) == {
        "failed": 4,
        "parked": 1,
        "refused": 1,
        "unexplained": [
            "silent (failed in MarkCompleted: States.Runtime)",
            "park-failed (failed in MarkNeedsAttention)",
        ],
    }


def test_status_disagreements_reads_terminal_orders_against_the_ledger() -> None:
    statuses = {
        "ok": {"status": "COMPLETED"},
        "shipped-and-refunded": {"status": "COMPENSATED"},
        "stuck": {"status": "SHIPPED"},  # not terminal: another invariant's business
    }
    ledger = [
        {"sk": "op", "order_id": "ok", "action": "charge", "status": "captured"},
        {"sk": "op", "order_id": "ok", "action": "ship", "status": "shipped"},
        {"sk": "op", "order_id": "shipped-and-refunded", "action": "charge", "status": "captured"},
        {"sk": "op", "order_id": "shipped-and-refunded", "action": "refund", "status": "refunded"},
        {"sk": "op", "order_id": "shipped-and-refunded", "action": "ship", "status": "shipped"},
        {"sk": "op", "order_id": "stuck", "action": "charge", "status": "captured"},
    ]
    inventory = [{"pk": "reservation#ok", "order_id": "ok", "status": "RESERVED"}]
    wrong = status_disagreements(statuses, ledger, inventory)
    assert len(wrong) == 1 and wrong[0].startswith(
        "shipped-and-refunded: COMPENSATED but captures=1 refunds=1 live_shipments=1"
    )


def test_random_faults_roll_only_the_kinds_that_are_on() -> None:
    from local_cloud.faults import FaultCounter

    counter = FaultCounter()
    faults = RandomFaults(saga(), {"status_write": 1.0, "park": 0.0, "stop": 0.0, "ambiguous": 0.0}, 3, counter)
    rule = faults.fire("o-1", "MarkCompleted", ("error",))
    assert rule is not None and rule.error in DYNAMODB_FAULTS
    assert faults.fire("o-1", "ChargePayment", ("error",)) is None
    assert faults.fire("o-1", "MarkNeedsAttention", ("error",)) is None
    assert faults.fire("o-1", "ChargePayment", ("stop",)) is None
    assert counter.injected == {"status_write_error": 1}


def test_random_faults_roll_the_same_for_a_seed_whatever_order_the_calls_arrive_in() -> None:
    """A chaos run's executions consult the plan from many threads; which attempt fails must depend on the
    seed, the order, the state and the attempt, not on thread timing (a shared generator made a 200-order
    run inject 0 to 5 status-write faults from one seed)."""
    from local_cloud.faults import FaultCounter

    rates = {"status_write": 0.3, "park": 0.3, "stop": 0.1, "ambiguous": 0.3}
    calls: list[tuple[str, str, tuple[str, ...]]] = [
        (f"o-{n}", state, kinds)
        for n in range(40)
        for state, kinds in (("MarkCompleted", ("error",)), ("ChargePayment", ("stop", "ambiguous")))
        for _attempt in range(2)
    ]

    def rules(order: list[tuple[str, str, tuple[str, ...]]]) -> dict[tuple[str, str], list[Any]]:
        faults = RandomFaults(saga(), rates, 7, FaultCounter())
        out: dict[tuple[str, str], list[Any]] = {}
        for order_id, state, kinds in order:
            out.setdefault((order_id, state), []).append(faults.fire(order_id, state, kinds, "charge"))
        return out

    forward = rules(calls)
    assert forward == rules(calls[::-1])
    assert any(r is not None for fired in forward.values() for r in fired)


def test_judge_a_refused_repair_is_fine_only_when_the_order_was_left_as_it_was() -> None:
    from harness.matrix.fault_matrix import judge

    stuck = facts(status="SHIPPED", captures=1, live_shipments=1)
    assert judge(stuck, {"result": "refused", "left_as_it_was": True}) == ("REFUSED", [])
    outcome, problems = judge(stuck, {"result": "refused", "left_as_it_was": False, "said": "RepairRefused: no"})
    assert outcome == "VIOLATION" and "but the order changed" in problems[0]
    assert judge(stuck, {"result": "error", "said": "ClientError: boom"})[0] == "VIOLATION"
    assert judge(stuck, {"result": "started"})[0] == "VIOLATION"  # judged by how it ended


def test_no_reservation_held_leaves_parked_orders_to_the_operator() -> None:
    from harness.reporting.invariants import CHECKS

    held = CHECKS["no_reservation_held_for_incomplete_orders"]
    report: dict[str, Any] = {"side_effects": {"reservations_outstanding": 2}, "ledger": {}}
    report["ledger"]["reservations_outstanding_orders"] = ["o-1:NEEDS_ATTENTION"]
    assert held(report) is None
    report["ledger"]["reservations_outstanding_orders"] = ["o-1:NEEDS_ATTENTION", "o-2:COMPENSATED"]
    assert held(report) == "1 reservations held for orders that did not complete; e.g. ['o-2:COMPENSATED']"


def test_classify_reads_money_and_parcel_for_an_announced_order_too() -> None:
    """Issue 28: a parked or announced order is a success only if its side effects are not harm."""
    refunded_and_shipped = facts(
        status="NEEDS_ATTENTION", captures=1, refunds=1, live_shipments=1, attention_messages=1, attention_alarm=True
    )
    assert classify(refunded_and_shipped)[0] == "VIOLATION"
    completed_then_undone = facts(
        status="COMPLETED", captures=1, refunds=1, live_shipments=0, attention_messages=1, attention_alarm=True
    )
    outcome, problems = classify(completed_then_undone)
    assert outcome == "VIOLATION" and any("COMPLETED but refunds=1" in p for p in problems)
    parked_holding_money = facts(
        status="NEEDS_ATTENTION", captures=1, live_shipments=1, attention_messages=1, attention_alarm=True
    )
    assert classify(parked_holding_money)[0] == "NEEDS_ATTENTION"


def test_cells_reach_a_fallback_recorder_by_failing_the_steps_own_outcome_write() -> None:
    """Decision 0024: ChargePayment ends the execution having recorded the outcome itself; its
    ``EffectDoneOutcomeNotWritten`` leads to MarkCompleted. No cell injects that error before the step
    acted (it would claim an effect that never happened); the route and the new cells fail the step's
    outcome write (a DynamoDB error, or the function dying between its effect and the write)."""
    definition = saga()
    charge = definition["States"]["ChargePayment"]
    del charge["Next"]
    charge["End"] = True
    charge["Catch"].insert(1, {"ErrorEquals": ["EffectDoneOutcomeNotWritten"], "Next": "MarkCompleted"})
    states = task_states(definition)

    route = route_to(states, "Reserve", "MarkCompleted")
    assert route is not None
    assert [(r.state, r.kind, r.error) for r in route] == [("ChargePayment", "outcome_write", "ThrottlingException")]
    keys = {c.key for c in generate_cells(definition)}
    assert not any("EffectDoneOutcomeNotWritten" in k for k in keys)
    for fault in ("ThrottlingException", "InternalServerError", "ConditionalCheckFailedException", "crash"):
        assert {f"ChargePayment|outcome-write-{fault}|once", f"ChargePayment|outcome-write-{fault}|forever"} <= keys
    assert not any(k.startswith("Reserve|outcome-write") for k in keys)  # Reserve records nothing itself


def test_outcome_write_names_only_a_steps_update_to_an_outcome() -> None:
    from harness.faults.inject import outcome_write

    def update(to: str) -> dict[str, Any]:
        return {"Key": {"order_id": {"S": "o-1"}}, "ExpressionAttributeValues": {":to": {"S": to}}}

    assert outcome_write("UpdateItem", update("COMPLETED")) == "o-1"
    assert outcome_write("UpdateItem", update("COMPENSATED")) == "o-1"
    assert outcome_write("UpdateItem", update("COMPENSATING")) is None
    assert outcome_write("PutItem", update("COMPLETED")) is None
