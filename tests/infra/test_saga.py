"""The order saga state machine: resource settings and the parsed ASL definition."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from functools import cache
from typing import Any

import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk.assertions import Template

from constructs_lib.saga import DEFAULT_TRANSIENT_ERRORS, OrderSaga, OrderSagaProps, RetryPolicy
from shared.step import step_payload
from tests.infra.conftest import InlineFunctionFactory, SynthResult, join_to_string, placeholder_target

FORWARD = ("ReserveInventory", "ChargePayment", "ShipOrder")
COMPENSATIONS = ("RefundPayment", "ReleaseInventory")
FINALIZE = ("MarkCompleted", "MarkCompensated", "MarkNeedsAttention")

#: The execution input intake starts the saga with (lambdas/order_domain/saga_start.py).
SAGA_INPUT = {
    "order_id": "o-1",
    "correlation_id": "c-1",
    "order": {"order_id": "o-1", "sku": "SKU-1", "quantity": 1, "amount_cents": 100},
}


def _catches(state: dict[str, Any]) -> list[tuple[list[str], str]]:
    return [(c["ErrorEquals"], c["Next"]) for c in state.get("Catch", [])]


def _render_parameters(parameters: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    """Apply ASL ``Parameters`` (``key.$`` JSONPath references) to a state document."""
    rendered: dict[str, Any] = {}
    for key, value in parameters.items():
        if not key.endswith(".$"):
            rendered[key] = value
            continue
        assert value.startswith("$"), value
        resolved: Any = state
        for part in filter(None, value[1:].split(".")):
            resolved = resolved[part]
        rendered[key[:-2]] = resolved
    return rendered


def worst_case_execution_seconds(definition: dict[str, Any], function_timeouts: dict[str, float]) -> float:
    """Longest path through the (acyclic) definition if every attempt of every task times out.

    Each retrier is exhausted (its own attempt counter), each delay is the un-jittered cap
    ``min(IntervalSeconds * BackoffRate**n, MaxDelaySeconds)``; Catch transitions count as edges.
    """
    states = definition["States"]

    @cache
    def longest(name: str) -> float:
        state = states[name]
        if state["Type"] in ("Succeed", "Fail"):
            return 0.0
        assert state["Type"] == "Task", f"unexpected state type in {name}"
        timeout = function_timeouts[placeholder_target(state["Resource"]) or ""]
        timeout = min(timeout, state.get("TimeoutSeconds", math.inf))
        attempts, delays = 1, 0.0
        for retrier in state.get("Retry", []):
            n_max = retrier.get("MaxAttempts", 3)
            interval, rate = retrier.get("IntervalSeconds", 1), retrier.get("BackoffRate", 2.0)
            cap = retrier.get("MaxDelaySeconds", math.inf)
            attempts += n_max
            delays += sum(min(interval * rate**n, cap) for n in range(n_max))
        successors = ([state["Next"]] if "Next" in state else []) + [c["Next"] for c in state.get("Catch", [])]
        return attempts * timeout + delays + max((longest(s) for s in successors), default=0.0)

    return longest(definition["StartAt"])


def _function_timeouts(template_json: Mapping[str, Any]) -> dict[str, float]:
    return {
        logical_id: resource["Properties"].get("Timeout", 3)
        for logical_id, resource in template_json["Resources"].items()
        if resource["Type"] == "AWS::Lambda::Function"
    }


# --- the AWS::StepFunctions::StateMachine resource ---------------------------------------------


def test_state_machine_standard_traced_and_fully_logged(dev: SynthResult) -> None:
    props = dev.properties(dev.logical_id(dev.stack.saga.state_machine))
    assert props["StateMachineType"] == "STANDARD"
    assert props["TracingConfiguration"] == {"Enabled": True}
    logging = props["LoggingConfiguration"]
    assert logging["Level"] == "ALL"
    assert logging["IncludeExecutionData"] is True
    assert logging["Destinations"] == [
        {"CloudWatchLogsLogGroup": {"LogGroupArn": {"Fn::GetAtt": [dev.logical_id(dev.stack.saga.log_group), "Arn"]}}}
    ]


def test_state_machine_definition_is_fn_join(dev: SynthResult) -> None:
    props = dev.properties(dev.logical_id(dev.stack.saga.state_machine))
    assert set(props["DefinitionString"]) == {"Fn::Join"}
    assert json.loads(join_to_string(props["DefinitionString"]))["StartAt"] == "ReserveInventory"


# --- the saga's shape ---------------------------------------------------------------------------


def test_saga_forward_path_reserve_charge_ship_complete(saga_definition: dict[str, Any]) -> None:
    states = saga_definition["States"]
    assert saga_definition["StartAt"] == "ReserveInventory"
    assert states["ReserveInventory"]["Next"] == "ChargePayment"
    assert states["ChargePayment"]["Next"] == "ShipOrder"
    assert states["ShipOrder"]["Next"] == "MarkCompleted"
    assert states["MarkCompleted"]["Next"] == "OrderCompleted"
    assert states["OrderCompleted"]["Type"] == "Succeed"


def test_saga_tasks_invoke_their_functions(dev: SynthResult, saga_definition: dict[str, Any]) -> None:
    stack = dev.stack
    expected = {
        "ReserveInventory": stack.reserve,
        "ChargePayment": stack.charge,
        "ShipOrder": stack.ship,
        "RefundPayment": stack.refund,
        "ReleaseInventory": stack.release,
        **dict.fromkeys(FINALIZE, stack.finalize),
    }
    for name, construct in expected.items():
        state = saga_definition["States"][name]
        assert state["Type"] == "Task", name
        assert placeholder_target(state["Resource"]) == dev.logical_id(construct.function), name


def test_saga_reserve_failure_releases_inventory(saga_definition: dict[str, Any]) -> None:
    assert _catches(saga_definition["States"]["ReserveInventory"]) == [(["States.ALL"], "ReleaseInventory")]


def test_saga_charge_declined_releases_and_unknown_refunds(saga_definition: dict[str, Any]) -> None:
    # Order matters: the first matching catcher wins, so PaymentDeclined must precede States.ALL.
    assert _catches(saga_definition["States"]["ChargePayment"]) == [
        (["PaymentDeclined"], "ReleaseInventory"),
        (["States.ALL"], "RefundPayment"),
    ]


def test_saga_ship_failure_refunds(saga_definition: dict[str, Any]) -> None:
    assert _catches(saga_definition["States"]["ShipOrder"]) == [(["States.ALL"], "RefundPayment")]


def test_saga_compensations_run_in_reverse_order(saga_definition: dict[str, Any]) -> None:
    states = saga_definition["States"]
    assert states["RefundPayment"]["Next"] == "ReleaseInventory"
    assert states["ReleaseInventory"]["Next"] == "MarkCompensated"
    assert states["MarkCompensated"]["Next"] == "OrderCompensated"
    assert states["OrderCompensated"]["Type"] == "Succeed"


def test_saga_compensations_retry_all_errors_with_full_jitter(saga_definition: dict[str, Any]) -> None:
    for name in COMPENSATIONS:
        (retry,) = saga_definition["States"][name]["Retry"]
        assert retry["ErrorEquals"] == ["States.ALL"], name
        assert retry["JitterStrategy"] == "FULL", name
        assert retry["MaxDelaySeconds"] == 30, name
        assert retry["MaxAttempts"] == 5, name
        assert retry["IntervalSeconds"] == 2, name
        assert retry["BackoffRate"] == 2, name


def test_saga_compensation_failure_parks_order_and_fails(saga_definition: dict[str, Any]) -> None:
    states = saga_definition["States"]
    for name in COMPENSATIONS:
        assert _catches(states[name]) == [(["States.ALL"], "MarkNeedsAttention")], name
    fail = states[states["MarkNeedsAttention"]["Next"]]
    assert fail["Type"] == "Fail"
    assert fail["Error"] == "CompensationFailed"
    assert fail.get("Cause")


def test_saga_forward_steps_retry_only_transient_errors(saga_definition: dict[str, Any]) -> None:
    for name in (*FORWARD, *FINALIZE):
        (retry,) = saga_definition["States"][name]["Retry"]
        assert retry["ErrorEquals"] == list(DEFAULT_TRANSIENT_ERRORS), name
        assert "States.ALL" not in retry["ErrorEquals"], name
        assert retry["JitterStrategy"] == "FULL", name
        assert retry["MaxDelaySeconds"] == 10, name
        assert retry["MaxAttempts"] == 3, name


def test_saga_catches_keep_the_order_state(saga_definition: dict[str, Any]) -> None:
    """A Catch without ResultPath would replace the state with the error (order_id lost)."""
    for name, state in saga_definition["States"].items():
        for catcher in state.get("Catch", []):
            assert catcher.get("ResultPath", "$").startswith("$."), name
        if state["Type"] == "Task":
            assert state.get("ResultPath", "$").startswith("$."), name


def test_saga_states_all_reachable_and_targets_exist(saga_definition: dict[str, Any]) -> None:
    states = saga_definition["States"]
    seen, todo = set(), [saga_definition["StartAt"]]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        assert name in states, f"transition to unknown state {name}"
        seen.add(name)
        state = states[name]
        todo.extend(([state["Next"]] if "Next" in state else []) + [c["Next"] for c in state.get("Catch", [])])
        if state["Type"] == "Task":
            assert "Next" in state or state.get("End") is True, name
    assert seen == set(states)


def test_saga_timeout_covers_construct_budget(dev: SynthResult, saga_definition: dict[str, Any]) -> None:
    budget = dev.stack.saga.timeout.to_seconds()
    assert "TimeoutSeconds" in saga_definition
    assert saga_definition["TimeoutSeconds"] >= budget
    assert budget > 0


def test_saga_timeout_covers_worst_case_path(dev: SynthResult, saga_definition: dict[str, Any]) -> None:
    worst = worst_case_execution_seconds(saga_definition, _function_timeouts(dev.template.to_json()))
    # Reserve, Charge, Ship (4 x 30 s + 7 s each), Refund, Release (6 x 30 s + 60 s each), one finalize.
    assert worst == 3 * 127 + 2 * 240 + 127
    assert saga_definition["TimeoutSeconds"] >= worst


# --- payloads: what the step handlers receive ---------------------------------------------------


def test_saga_steps_receive_full_state_accepted_by_handler(saga_definition: dict[str, Any]) -> None:
    for name in (*FORWARD, *COMPENSATIONS):
        state = saga_definition["States"][name]
        assert not {"Parameters", "InputPath", "ItemSelector"} & set(state), name
    # ... so they get the execution input plus earlier results / the caught error, which the handler accepts.
    payload = step_payload({**SAGA_INPUT, "reservation": {}, "error": {"Error": "X", "Cause": "y"}})
    assert payload == {"order_id": "o-1", "order": SAGA_INPUT["order"]}


def test_saga_finalize_payload_accepted_by_step_handler(saga_definition: dict[str, Any]) -> None:
    """Mark* tasks build their own payload: it must still carry what shared.step.step_payload requires."""
    failure = {"Error": "ProviderUnavailable", "Cause": "boom"}
    state_document = {**SAGA_INPUT, "reservation": {}, "error": failure, "compensation_error": failure}
    outcomes = {"MarkCompleted": "COMPLETED", "MarkCompensated": "COMPENSATED", "MarkNeedsAttention": "NEEDS_ATTENTION"}
    for name, outcome in outcomes.items():
        rendered = _render_parameters(saga_definition["States"][name]["Parameters"], state_document)
        assert rendered["outcome"] == outcome, name
        assert rendered["correlation_id"] == "c-1", name
        payload = step_payload(rendered)  # raised InvalidOrder while the payload lacked "order"
        assert payload == {"order_id": "o-1", "order": SAGA_INPUT["order"], "outcome": outcome}, name
    needs_attention = _render_parameters(saga_definition["States"]["MarkNeedsAttention"]["Parameters"], state_document)
    assert needs_attention["error"] == failure


# --- the budget with non-default retry policies (small stack, inline functions) -----------------


def _saga_template(inline_function: InlineFunctionFactory, **props: Any) -> dict[str, Any]:
    stack = Stack(App(), "SagaUnderTest")
    fns = {
        name: inline_function(stack, name, 30) for name in ("Reserve", "Charge", "Ship", "Refund", "Release", "Final")
    }
    OrderSaga(
        stack,
        "Saga",
        props=OrderSagaProps(
            reserve_inventory=fns["Reserve"],
            charge_payment=fns["Charge"],
            ship_order=fns["Ship"],
            refund_payment=fns["Refund"],
            release_inventory=fns["Release"],
            finalize_order=fns["Final"],
            step_timeout=Duration.seconds(30),
            **props,
        ),
    )
    return dict(Template.from_stack(stack).to_json())


@pytest.mark.parametrize(
    "props",
    [
        pytest.param({}, id="defaults"),
        pytest.param(
            {
                "compensation_retry": RetryPolicy(
                    interval=Duration.seconds(5), max_attempts=8, max_delay=Duration.seconds(120)
                )
            },
            id="long-compensation-retry",
        ),
        pytest.param(
            {"forward_retry": RetryPolicy(max_attempts=10)},
            id="more-forward-retries",
        ),
    ],
)
def test_saga_timeout_covers_worst_case_path_for_retry_policies(
    inline_function: InlineFunctionFactory, props: dict[str, Any]
) -> None:
    template = _saga_template(inline_function, **props)
    (machine,) = (r for r in template["Resources"].values() if r["Type"] == "AWS::StepFunctions::StateMachine")
    definition = json.loads(join_to_string(machine["Properties"]["DefinitionString"]))
    worst = worst_case_execution_seconds(definition, _function_timeouts(template))
    assert definition["TimeoutSeconds"] >= worst, f"timeout {definition['TimeoutSeconds']} s < worst case {worst} s"
