"""The order saga state machine: resource settings and the parsed ASL definition."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from functools import cache
from typing import Any

import boto3
import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Match, Template
from moto import mock_aws

from constructs_lib.generic_saga import DYNAMODB_TRANSIENT_ERRORS, LAMBDA_INIT_SECONDS, STATE_LATENCY_SECONDS
from constructs_lib.saga.tasks import THROTTLE_ERRORS
from lambda_resilience.tracing import traceparent_from_payload
from order_domain.status import OrderStatus, sources_of
from order_domain.step import step_payload
from stacks.order_constructs.order_saga import (
    DEFAULT_TRANSIENT_ERRORS,
    OUTAGE_ERRORS,
    OrderSaga,
    OrderSagaProps,
    RetryPolicy,
)
from tests.infra.conftest import InlineFunctionFactory, SynthResult, as_list, join_to_string, placeholder_target

FORWARD = ("ReserveInventory", "ChargePayment", "ShipOrder")
COMPENSATIONS = (
    "CancelShipment",
    "RefundPayment",
    "ReleaseInventory",
    "ReleaseInventoryThenPark",
)
#: Outcome writes: direct DynamoDB UpdateItem integrations (no Lambda), and the park function.
OUTCOME_WRITES = {"MarkCompleted": "COMPLETED", "MarkCompensated": "COMPENSATED"}
DYNAMODB_UPDATE_ITEM = "arn:ARN<AWS::Partition>:states:::dynamodb:updateItem"

#: The execution input intake starts the saga with (lambdas/order_domain/saga_start.py).
#: What intake starts the saga with: references only (order_domain.saga_start.saga_input).
SAGA_INPUT = {
    "order_id": "o-1",
    "payment_attempt": 1,
    "correlation_id": "c-1",
    "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
}


#: Every step's first catcher: a parked order nobody asked the step to act on ends the execution (decision 0029).
ALREADY_PARKED = (["OrderParked"], "AlreadyParked")


def _catches(state: dict[str, Any]) -> list[tuple[list[str], str]]:
    return [(c["ErrorEquals"], c["Next"]) for c in state.get("Catch", [])]


def _successors(state: dict[str, Any]) -> list[str]:
    """Every state a state can move to: Next, Catch targets, and a Choice's branches and Default."""
    found = [state["Next"]] if "Next" in state else []
    found += [c["Next"] for c in state.get("Catch", [])]
    found += [c["Next"] for c in state.get("Choices", [])]
    found += [state["Default"]] if "Default" in state else []
    return found


def _render_parameters(parameters: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    """Apply ASL ``Parameters`` (``key.$`` JSONPath references) to a state document."""
    rendered: dict[str, Any] = {}
    for key, value in parameters.items():
        if not key.endswith(".$"):
            rendered[key] = value
            continue
        assert value.startswith("$"), value
        resolved: Any = state
        if value.startswith("$$."):  # the context object: the execution's name and input are used
            assert value in ("$$.Execution.Name", "$$.Execution.Input"), value
            if value == "$$.Execution.Input":
                rendered[key[:-2]] = state.get("__execution_input__", SAGA_INPUT)
            else:
                rendered[key[:-2]] = state.get("__execution_name__", "order-o-1-attempt-1")
            continue
        for part in filter(None, value[1:].split(".")):
            resolved = resolved[part]
        rendered[key[:-2]] = resolved
    return rendered


def worst_case_execution_seconds(definition: dict[str, Any], function_timeouts: dict[str, float]) -> float:
    """Longest path through the (acyclic) definition if every attempt of every task times out (a throttled
    attempt excepted: Lambda refuses it before anything runs, so it costs the state latency only).

    Each retrier is exhausted (its own attempt counter), each delay is the un-jittered cap
    ``min(IntervalSeconds * BackoffRate**n, MaxDelaySeconds)``; Catch transitions count as edges.
    Each attempt also costs Step Functions' latency allowance, and a Lambda attempt a failed Init
    phase (10 s, https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html).
    """
    states = definition["States"]

    @cache
    def longest(name: str) -> float:
        state = states[name]
        if state["Type"] in ("Succeed", "Fail"):
            return 0.0
        if state["Type"] == "Choice":  # takes no time: the longest of its branches
            return max(longest(s) for s in _successors(state))
        assert state["Type"] == "Task", f"unexpected state type in {name}"
        target = placeholder_target(state["Resource"])
        timeout = function_timeouts[target] if target else math.inf  # a service integration: its TimeoutSeconds
        timeout = min(timeout, state.get("TimeoutSeconds", math.inf))
        assert timeout < math.inf, f"{name} has no bounded attempt time"
        timeout += STATE_LATENCY_SECONDS + (LAMBDA_INIT_SECONDS if target else 0.0)
        attempts, delays = 1, 0.0
        for retrier in state.get("Retry", []):
            n_max = retrier.get("MaxAttempts", 3)
            interval, rate = retrier.get("IntervalSeconds", 1), retrier.get("BackoffRate", 2.0)
            cap = retrier.get("MaxDelaySeconds", math.inf)
            delays += sum(min(interval * rate**n, cap) for n in range(n_max))
            if set(retrier["ErrorEquals"]) <= set(THROTTLE_ERRORS):
                # Lambda refused each of these attempts before anything ran: no Init, no timeout, the latency only.
                delays += n_max * STATE_LATENCY_SECONDS
            else:
                attempts += n_max
        return attempts * timeout + delays + max((longest(s) for s in _successors(state)), default=0.0)

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


def test_state_machine_logs_errors_only_in_prod_under_vendedlogs(prod: SynthResult, dev: SynthResult) -> None:
    """Prod logs failed executions' error events without data (decision 0022); both stages' log
    groups are named under /aws/vendedlogs/states/ (AWS's Step Functions best practice)."""
    props = prod.properties(prod.logical_id(prod.stack.saga.state_machine))
    assert props["LoggingConfiguration"]["Level"] == "ERROR"
    assert props["LoggingConfiguration"]["IncludeExecutionData"] is False
    for synth in (dev, prod):
        group = synth.properties(synth.logical_id(synth.stack.saga.log_group))
        assert group["LogGroupName"] == f"/aws/vendedlogs/states/{synth.stack.stack_name}-order-saga"


def test_state_machine_log_group_is_infrequent_access_in_prod(prod: SynthResult, dev: SynthResult) -> None:
    """Prod's execution log (ERROR, read only when an execution failed, no metric filter on it) is in the
    Infrequent Access class, half the ingestion price (decision 0022); dev keeps Standard (Live Tail)."""
    group = prod.properties(prod.logical_id(prod.stack.saga.log_group))
    assert group["LogGroupClass"] == "INFREQUENT_ACCESS"
    assert dev.properties(dev.logical_id(dev.stack.saga.log_group)).get("LogGroupClass", "STANDARD") == "STANDARD"
    assert not prod.of_type("AWS::Logs::MetricFilter") and not prod.of_type("AWS::Logs::SubscriptionFilter")


def test_functions_send_start_and_report_records(prod: SynthResult) -> None:
    """System log level INFO: the REPORT record (Init Duration) reaches the log group, for `ops cold-starts`."""
    functions = list(prod.of_type("AWS::Lambda::Function").values())
    assert functions
    for function in functions:
        assert function["Properties"]["LoggingConfig"]["SystemLogLevel"] == "INFO"


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
    # ShipOrder records COMPLETED itself and ends the execution (decision 0024): one transition less.
    assert states["ShipOrder"].get("End") is True and "Next" not in states["ShipOrder"]
    assert states["MarkCompleted"].get("End") is True  # the error path's recorder: no Succeed after it


def test_saga_tasks_invoke_their_functions(dev: SynthResult, saga_definition: dict[str, Any]) -> None:
    stack = dev.stack
    expected = {
        "ReserveInventory": stack.reserve,
        "ChargePayment": stack.charge,
        "ShipOrder": stack.ship,
        "CancelShipment": stack.cancel_shipment,
        "RefundPayment": stack.refund,
        "ReleaseInventory": stack.release,
        "ReleaseInventoryThenPark": stack.release,
        "MarkNeedsAttention": stack.finalize,
    }
    for name, construct in expected.items():
        state = saga_definition["States"][name]
        assert state["Type"] == "Task", name
        assert placeholder_target(state["Resource"]) == dev.logical_id(construct.function), name
    for name in OUTCOME_WRITES:
        state = saga_definition["States"][name]
        assert state["Resource"] == DYNAMODB_UPDATE_ITEM, name
        assert state["Parameters"]["TableName"] == f"ARN<{dev.logical_id(stack.orders_table)}>", name
    last_resort = saga_definition["States"]["NotifyNeedsAttention"]
    assert last_resort["Resource"] == "arn:ARN<AWS::Partition>:states:::sqs:sendMessage"
    assert last_resort["Parameters"]["QueueUrl"] == f"ARN<{dev.logical_id(stack.needs_attention.queue)}>"  # its Ref
    tasks = {name for name, state in saga_definition["States"].items() if state["Type"] == "Task"}
    assert tasks == set(expected) | set(OUTCOME_WRITES) | {"NotifyNeedsAttention"}


# --- no routing states; the repair entry ----------------------------------------------------------


def test_saga_has_no_routing_states(saga_definition: dict[str, Any]) -> None:
    """Only tasks on every path; the one Succeed state ends a repeated outcome write, the Fail states fail."""
    states = saga_definition["States"]
    types = {name: state["Type"] for name, state in states.items()}
    assert not [name for name, t in types.items() if t in ("Choice", "Pass", "Wait", "Parallel", "Map")]
    assert [name for name, t in types.items() if t == "Succeed"] == ["OutcomeAlreadyRecorded"]
    assert sorted(name for name, t in types.items() if t == "Fail") == [
        "AlreadyParked",
        "CompensationFailed",
        "InputRefused",
    ]


def test_saga_repair_request_skips_to_the_compensations(saga_definition: dict[str, Any]) -> None:
    """``ops repair --action compensate``: ReserveInventory raises CompensationRequested -> CancelShipment
    (no refund of a possibly shipped order without cancelling its shipment first)."""
    (catcher,) = [c for c in saga_definition["States"]["ReserveInventory"]["Catch"] if c["Next"] == "CancelShipment"]
    assert catcher["ErrorEquals"] == ["CompensationRequested"]
    assert catcher["ResultPath"] == "$.error"


def test_saga_reserve_failure_releases_inventory(saga_definition: dict[str, Any]) -> None:
    # First: an input naming no order we can act on ends the execution; nothing was done.
    assert _catches(saga_definition["States"]["ReserveInventory"]) == [
        ALREADY_PARKED,
        (["UnknownOrder", "InvalidStepInput", "StaleAttempt"], "InputRefused"),
        (["CompensationRequested"], "CancelShipment"),
        # a business outcome (or an order another actor moved on) undoes the step
        (["InsufficientStock", "InvalidOrder", "InvalidTransition", "OrderMovedOn"], "ReleaseInventory"),
        (list(DEFAULT_TRANSIENT_ERRORS), "MarkNeedsAttention"),  # a throttle, an outage park, never compensate
        (["States.ALL"], "MarkNeedsAttention"),  # an unknown error is no business decision (decision 0034)
    ]
    assert saga_definition["States"]["InputRefused"]["Type"] == "Fail"


def test_saga_charge_declined_releases_incomplete_refunds_and_unknown_parks(saga_definition: dict[str, Any]) -> None:
    # Order matters: the first matching catcher wins, so the named errors precede States.ALL.
    assert _catches(saga_definition["States"]["ChargePayment"]) == [
        ALREADY_PARKED,
        (["PaymentDeclined"], "ReleaseInventory"),
        (["PaymentIncomplete", "StaleAttempt", "OrderMovedOn"], "RefundPayment"),
        (list(DEFAULT_TRANSIENT_ERRORS), "MarkNeedsAttention"),
        (["States.ALL"], "MarkNeedsAttention"),
    ]


def test_saga_ship_failure_cancels_the_shipment_unless_the_carrier_rejected_it(saga_definition: dict[str, Any]) -> None:
    """Rejected: nothing shipped, refund. A stale attempt: cancel its shipment first. Any other failure (outcome
    unknown, no business decision): park for a person, nothing undone (decision 0034)."""
    assert _catches(saga_definition["States"]["ShipOrder"]) == [
        ALREADY_PARKED,
        (["ShippingUnavailable"], "RefundPayment"),
        (["StaleAttempt"], "CancelShipment"),
        # the parcel is booked, its outcome write failed: record it, never cancel (decision 0024)
        (["EffectDoneOutcomeNotWritten"], "MarkCompleted"),
        (list(DEFAULT_TRANSIENT_ERRORS), "MarkNeedsAttention"),
        (["States.ALL"], "MarkNeedsAttention"),
    ]
    cancel = saga_definition["States"]["CancelShipment"]
    assert cancel["Next"] == "RefundPayment" and cancel["ResultPath"] == "$.cancellation"


def test_saga_shipment_not_cancellable_parks_at_once_without_refund(saga_definition: dict[str, Any]) -> None:
    """A parcel the carrier will not recall is never refunded: not retried, straight to the park. A
    cancel that keeps failing (the carrier does not answer: the parcel may still ship) parks after
    its retries, also without a refund or a release."""
    cancel = saga_definition["States"]["CancelShipment"]
    assert cancel["Retry"][0] == {"ErrorEquals": ["ShipmentNotCancellable", "OrderParked"], "MaxAttempts": 0}
    assert cancel["Retry"][1]["ErrorEquals"] == ["States.ALL"]
    assert _catches(cancel) == [
        ALREADY_PARKED,
        (["ShipmentNotCancellable"], "MarkNeedsAttention"),
        (["States.ALL"], "MarkNeedsAttention"),
    ]
    assert all(c["ResultPath"] == "$.compensation_error" for c in cancel["Catch"])


def test_saga_forward_throttle_past_its_retries_parks_without_compensating(saga_definition: dict[str, Any]) -> None:
    """A throttle is waited out, not compensated (issue 40): a forward step still throttled after its throttle
    retrier (or failing on any transient error after its retriers, decision 0032) parks the order
    (NEEDS_ATTENTION, paged through ParkedOrders) with nothing undone, for an operator to finish
    (``ops repair --action redrive``) once capacity is back; never a valid order cancelled silently."""
    states = saga_definition["States"]
    for name in FORWARD:
        catches = _catches(states[name])
        assert set(THROTTLE_ERRORS) <= set(catches[-2][0]), name
        assert catches[-2:] == [
            (list(DEFAULT_TRANSIENT_ERRORS), "MarkNeedsAttention"),
            (["States.ALL"], "MarkNeedsAttention"),
        ]
        for caught in states[name]["Catch"][-2:]:
            assert caught["ResultPath"] == "$.compensation_error", name  # the path the park reads


def test_saga_compensations_run_in_reverse_order(saga_definition: dict[str, Any]) -> None:
    states = saga_definition["States"]
    assert states["CancelShipment"]["Next"] == "RefundPayment"
    assert states["RefundPayment"]["Next"] == "ReleaseInventory"
    assert states["RefundPayment"]["ResultPath"] == "$.refund"
    assert states["ReleaseInventory"]["ResultPath"] == "$.release"
    # The last compensation records COMPENSATED itself (decision 0024); its failure to write goes to
    # MarkCompensated, and is never retried as a compensation.
    assert states["ReleaseInventory"].get("End") is True and "Next" not in states["ReleaseInventory"]
    assert states["ReleaseInventory"]["Retry"][0] == {
        "ErrorEquals": ["EffectDoneOutcomeNotWritten", "OrderParked"],
        "MaxAttempts": 0,
    }
    assert states["MarkCompensated"].get("End") is True


def test_saga_compensations_retry_all_errors_with_full_jitter(saga_definition: dict[str, Any]) -> None:
    for name in COMPENSATIONS:
        retry = saga_definition["States"][name]["Retry"][-1]
        assert retry["ErrorEquals"] == ["States.ALL"], name
        assert retry["JitterStrategy"] == "FULL", name
        assert retry["MaxDelaySeconds"] == 30, name
        assert retry["MaxAttempts"] == 5, name
        assert retry["IntervalSeconds"] == 2, name
        assert retry["BackoffRate"] == 2, name


def test_saga_compensation_failure_parks_order_and_fails(saga_definition: dict[str, Any]) -> None:
    states = saga_definition["States"]
    assert _catches(states["ReleaseInventory"]) == [
        ALREADY_PARKED,
        (["EffectDoneOutcomeNotWritten"], "MarkCompensated"),
        (["States.ALL"], "MarkNeedsAttention"),
    ]
    assert all(c["ResultPath"] == "$.compensation_error" for c in states["ReleaseInventory"]["Catch"])
    fail = states[states["MarkNeedsAttention"]["Next"]]
    assert fail["Type"] == "Fail"
    assert fail["Error"] == "CompensationFailed"
    assert fail.get("Cause")


def test_saga_refund_failure_releases_stock_then_parks(saga_definition: dict[str, Any]) -> None:
    """A refund that keeps failing must not also keep the stock: ReleaseInventoryThenPark first."""
    states = saga_definition["States"]
    assert _catches(states["RefundPayment"]) == [ALREADY_PARKED, (["States.ALL"], "ReleaseInventoryThenPark")]
    assert states["RefundPayment"]["Catch"][1]["ResultPath"] == "$.compensation_error"
    park = states["ReleaseInventoryThenPark"]
    assert park["Type"] == "Task"
    assert park["Resource"] == states["ReleaseInventory"]["Resource"]
    assert park["ResultPath"] == "$.release"
    # released or not, the order is parked: success and failure both end in MarkNeedsAttention
    assert park["Next"] == "MarkNeedsAttention"
    assert _catches(park) == [ALREADY_PARKED, (["States.ALL"], "MarkNeedsAttention")]
    # its own failure goes to $.release_error, so $.compensation_error (the refund's) is not overwritten
    assert park["Catch"][1]["ResultPath"] == "$.release_error"


def test_saga_parked_order_reports_the_refund_error(saga_definition: dict[str, Any]) -> None:
    """Through ReleaseInventoryThenPark, MarkNeedsAttention still receives the refund's error."""
    refund_error = {"Error": "TransientStepError", "Cause": "ProviderUnavailable: provider_unavailable"}
    release_error = {"Error": "TransientStepError", "Cause": "ThrottlingException"}
    parameters = saga_definition["States"]["MarkNeedsAttention"]["Parameters"]
    after_release = {**SAGA_INPUT, "compensation_error": refund_error, "release": {"status": "released"}}
    after_failed_release = {**SAGA_INPUT, "compensation_error": refund_error, "release_error": release_error}
    for document in (after_release, after_failed_release):
        rendered = _render_parameters(parameters, document)
        assert rendered["error"] == refund_error
        assert rendered["outcome"] == "NEEDS_ATTENTION"


def test_saga_forward_steps_retry_only_transient_errors(saga_definition: dict[str, Any]) -> None:
    for name in (*FORWARD, "MarkNeedsAttention"):
        *waits, retry = saga_definition["States"][name]["Retry"]
        if name in FORWARD:  # a throttle, then an outage, on retriers of their own (issue 40; test_time_budget.py)
            assert [r["ErrorEquals"] for r in waits] == [list(THROTTLE_ERRORS), list(OUTAGE_ERRORS)], name
        else:
            assert waits == [], name
        waited = [e for t in waits for e in t["ErrorEquals"]]
        assert sorted(waited + retry["ErrorEquals"]) == sorted(DEFAULT_TRANSIENT_ERRORS), name
        assert not set(waited) & set(retry["ErrorEquals"]), name
        assert "States.ALL" not in retry["ErrorEquals"], name
        assert retry["JitterStrategy"] == "FULL", name
        # Step Functions' documented retry of Lambda service errors (order_saga.default_forward_retry)
        assert (retry["IntervalSeconds"], retry["BackoffRate"]) == (2, 2), name
        assert retry["MaxDelaySeconds"] == 30, name
        assert retry["MaxAttempts"] == 6, name


def test_saga_outcome_writes_retry_throttling_and_end_on_a_failed_condition(saga_definition: dict[str, Any]) -> None:
    """A repeat or a late write fails the condition: the execution ends, nothing is overwritten. Any
    other error (after the transient retries) parks the order: never SHIPPED / COMPENSATING unannounced."""
    for name in OUTCOME_WRITES:
        state = saga_definition["States"][name]
        (retry,) = state["Retry"]
        assert retry["ErrorEquals"] == list(DYNAMODB_TRANSIENT_ERRORS), name
        assert "DynamoDB.ConditionalCheckFailedException" not in retry["ErrorEquals"], name
        assert _catches(state) == [
            (["DynamoDB.ConditionalCheckFailedException"], "OutcomeAlreadyRecorded"),
            (["States.ALL"], "MarkNeedsAttention"),
        ], name
        assert state["Catch"][1]["ResultPath"] == "$.compensation_error", name  # the one path the park reads
        assert state["TimeoutSeconds"] == 10, name


def test_saga_park_that_fails_sends_the_last_resort_message_then_fails(saga_definition: dict[str, Any]) -> None:
    states = saga_definition["States"]
    park = states["MarkNeedsAttention"]
    assert _catches(park) == [(["States.ALL"], "NotifyNeedsAttention")]
    assert park["Catch"][0]["ResultPath"] == "$.final_error"  # the park error at $.compensation_error is kept
    last = states["NotifyNeedsAttention"]
    assert last["Next"] == "CompensationFailed"
    assert _catches(last) == [(["States.ALL"], "CompensationFailed")]
    assert last["TimeoutSeconds"] == 10
    body = dict(last["Parameters"]["MessageBody"])
    assert body.pop("reason.$").startswith("States.Format(")  # (not rendered here: it names the execution)
    rendered = _render_parameters(
        body, {**SAGA_INPUT, "compensation_error": {"Error": "ShipmentNotCancellable", "Cause": "handed over"}}
    )
    assert rendered == {
        "order_id": "o-1",
        "payment_attempt": 1,
        "correlation_id": "c-1",
        "error": {"Error": "ShipmentNotCancellable", "Cause": "handed over"},
        "source": "saga-last-resort",
    }
    assert last["Parameters"]["MessageAttributes"] == {
        "correlation_id": {"DataType": "String", "StringValue.$": "$.correlation_id"}
    }


def test_saga_role_sends_only_to_the_needs_attention_queue(dev: SynthResult) -> None:
    role = dev.logical_id(dev.stack.saga.state_machine.role)
    sends = [s for s in dev.statements_of_role(role) if any(a.startswith("sqs:") for a in as_list(s["Action"]))]
    assert [(s["Action"], s["Resource"]) for s in sends] == [
        ("sqs:SendMessage", {"Fn::GetAtt": [dev.logical_id(dev.stack.needs_attention.queue), "Arn"]})
    ]


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
        todo.extend(_successors(state))
        if state["Type"] == "Task":
            assert "Next" in state or state.get("End") is True, name
    assert seen == set(states)
    # 3 forward, 4 compensation tasks (3 + ReleaseInventoryThenPark), 3 Mark*, the last resort, 1 Succeed, 3 Fail
    assert len(states) == 15  # no RefundPaymentThenPark: a CancelShipment that fails parks, never refunds


def test_saga_timeout_is_the_construct_budget(dev: SynthResult, saga_definition: dict[str, Any]) -> None:
    """3 forward steps (and their throttle retriers) + 3 compensations (worst case each) + the slower
    outcome write + the park + the last resort + 60 s; each Lambda attempt also budgets a failed 10 s
    Init phase, each attempt 2 s of Step Functions latency."""
    lambda_attempt = 30 + 10 + 2  # timeout + failed Init phase + state latency
    forward_retry = RetryPolicy(interval=Duration.seconds(2), max_attempts=6, max_delay=Duration.seconds(30))
    forward = forward_retry.worst_case_seconds(30, 12)  # 7 x 42 s + 2 + 4 + 8 + 16 + 30 + 30 s
    compensation = RetryPolicy(
        interval=Duration.seconds(2), max_attempts=5, max_delay=Duration.seconds(30)
    ).worst_case_seconds(30, 12)  # 6 x 42 s + 2 + 4 + 8 + 16 + 30 s (OrderSagaProps' default)
    outcome_write = forward_retry.worst_case_seconds(10, 2)  # the UpdateItem / SendMessage TimeoutSeconds
    assert (forward, compensation, outcome_write) == (7 * lambda_attempt + 90, 6 * lambda_attempt + 60, 174)
    # Each forward step's own throttle retrier (issue 40): 13 refused attempts of 2 s latency, 1 s doubling to 60 s.
    throttle = RetryPolicy(
        interval=Duration.seconds(1), max_attempts=13, max_delay=Duration.seconds(60)
    ).worst_case_seconds(0, 2)
    assert throttle == 14 * 2 + 1 + 2 + 4 + 8 + 16 + 32 + 7 * 60
    # Each forward step's own outage retrier (issue 40): 20 more whole attempts, 2 s doubling to 60 s.
    outage = (
        RetryPolicy(interval=Duration.seconds(2), max_attempts=20, max_delay=Duration.seconds(60)).worst_case_seconds(
            30, 12
        )
        - lambda_attempt
    )  # its first attempt is the forward retrier's
    assert outage == 20 * lambda_attempt + 2 + 4 + 8 + 16 + 32 + 15 * 60
    budget = 3 * (forward + throttle + outage) + 3 * compensation + outcome_write + forward + outcome_write + 60
    assert budget == 9819
    assert saga_definition["TimeoutSeconds"] == budget
    assert dev.stack.saga.timeout.to_seconds() == budget


def test_saga_timeout_covers_worst_case_path(dev: SynthResult, saga_definition: dict[str, Any]) -> None:
    worst = worst_case_execution_seconds(saga_definition, _function_timeouts(dev.template.to_json()))
    # Reserve, Charge, Ship (384 s each, plus 509 s of throttle retries: 483 s of delays, 13 x 2 s, plus 1,802 s of
    # outage retries: 962 s of delays, 20 x 42 s), CancelShipment,
    # RefundPayment, ReleaseInventory (312 s each), MarkCompensated failing (174 s), MarkNeedsAttention failing (384 s),
    # NotifyNeedsAttention (174 s).
    assert worst == 3 * (384 + 509 + 1802) + 3 * 312 + 174 + 384 + 174
    assert saga_definition["TimeoutSeconds"] >= worst + 60


# --- payloads: what the step handlers receive ---------------------------------------------------


def test_saga_steps_receive_full_state_accepted_by_handler(saga_definition: dict[str, Any]) -> None:
    for name in (*FORWARD, *COMPENSATIONS):
        if name == "ReleaseInventory":  # the last compensation names its payload (next test)
            continue
        state = saga_definition["States"][name]
        assert not {"Parameters", "InputPath", "ItemSelector"} & set(state), name
    # ... so they get the execution input plus earlier results / the caught error, which the handler accepts.
    payload = step_payload({**SAGA_INPUT, "reservation": {}, "error": {"Error": "X", "Cause": "y"}})
    assert payload == {"order_id": "o-1", "payment_attempt": 1}
    assert "outcome" not in payload
    # The repair input (Route -> RefundPayment) is the intake input plus "compensate", which is not hashed
    # (the action gets it as an extra: a parked order is compensated only on that request).
    from order_domain.step import _parser

    repair, first = _parser("refund-payment")({**SAGA_INPUT, "compensate": True}), _parser("refund-payment")(SAGA_INPUT)
    assert (repair.payload, repair.idempotency_key) == (first.payload, first.idempotency_key)
    assert repair.extra == {"compensate": True} and first.extra == {}


def test_saga_last_compensation_payload_records_compensated_and_keeps_the_repair_flag(
    saga_definition: dict[str, Any],
) -> None:
    """ReleaseInventory (the end of the chain) tells the function to record COMPENSATED (decision 0024);
    its ThenPark copy gets the whole state and records nothing. The execution input goes whole, so an
    operator's ``"compensate": true`` and the trace context reach the function; the key is the same."""
    from order_domain.step import _parser

    states = saga_definition["States"]
    assert not {"Parameters", "InputPath"} & set(states["ReleaseInventoryThenPark"])
    repair_input = {**SAGA_INPUT, "compensate": True}
    state_document = {**repair_input, "refund": {}, "__execution_input__": repair_input}
    rendered = _render_parameters(states["ReleaseInventory"]["Parameters"], state_document)
    parsed = _parser("release-inventory")(rendered)
    assert parsed.extra == {"compensate": True, "record_outcome": "COMPENSATED"}
    assert parsed.idempotency_key == _parser("release-inventory")(SAGA_INPUT).idempotency_key
    assert traceparent_from_payload(rendered) == SAGA_INPUT["traceparent"]


def test_saga_park_payload_accepted_by_step_handler(saga_definition: dict[str, Any]) -> None:
    """MarkNeedsAttention builds its own payload: it must still carry what order_domain.step.step_payload requires."""
    failure = {"Error": "ProviderUnavailable", "Cause": "boom"}
    state_document = {**SAGA_INPUT, "reservation": {}, "error": failure, "compensation_error": failure}
    rendered = _render_parameters(saga_definition["States"]["MarkNeedsAttention"]["Parameters"], state_document)
    assert rendered["outcome"] == "NEEDS_ATTENTION"
    assert rendered["correlation_id"] == "c-1"
    # The park is keyed per execution (helper "domain": order_domain.step), so a repair's park is a new park.
    assert rendered["execution_name"] == "order-o-1-attempt-1"
    # The park continues the execution's trace (lambda_resilience.tracing reads it from the input it gets).
    assert traceparent_from_payload(rendered) == SAGA_INPUT["traceparent"]
    # FinalizeOrder's action only sees step_payload(): the error must survive it (-> last_error).
    expected = {"order_id": "o-1", "payment_attempt": 1, "outcome": "NEEDS_ATTENTION", "error": failure}
    assert {k: v for k, v in step_payload(rendered).items() if k != "execution_name"} == expected


@pytest.mark.parametrize(
    "route",
    ["compensation", "outcome_write", "not_cancellable"],
)
def test_saga_park_reads_one_error_path_whatever_route_reached_it(saga_definition: dict[str, Any], route: str) -> None:
    """Every catch into MarkNeedsAttention writes the path its payload reads (a compensation's failure,
    an outcome write's failure, ShipmentNotCancellable)."""
    states = saga_definition["States"]
    read = states["MarkNeedsAttention"]["Parameters"]["error.$"]
    into_park = {
        "compensation": [c for c in states["ReleaseInventory"]["Catch"] if c["Next"] == "MarkNeedsAttention"],
        "outcome_write": [
            c for name in OUTCOME_WRITES for c in states[name]["Catch"] if c["Next"] == "MarkNeedsAttention"
        ],
        "not_cancellable": [c for c in states["CancelShipment"]["Catch"] if c["Next"] == "MarkNeedsAttention"],
    }[route]
    assert into_park
    assert {c["ResultPath"] for c in into_park} == {read}


# --- the outcome writes: a direct DynamoDB integration with a condition ------------------------


def _render_dynamodb(value: Any, document: dict[str, Any], entered: str) -> Any:
    """ASL's ``"S.$"`` / ``"N.$"`` fields of a DynamoDB integration, resolved against ``document``."""
    if isinstance(value, list):
        return [_render_dynamodb(v, document, entered) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if not key.endswith(".$"):
            out[key] = _render_dynamodb(item, document, entered)
        elif item == "$$.State.EnteredTime":
            out[key[:-2]] = entered
        elif item.startswith("States.JsonToString("):
            out[key[:-2]] = json.dumps(
                _render_parameters({"v.$": item[len("States.JsonToString(") : -1]}, document)["v"]
            )
        else:
            out[key[:-2]] = _render_parameters({"v.$": item}, document)["v"]
    return out


def test_saga_outcome_conditions_match_the_status_rules(saga_definition: dict[str, Any]) -> None:
    """The states' source statuses are the ones lambdas/order_domain/status.py allows."""
    for name, outcome in OUTCOME_WRITES.items():
        values = saga_definition["States"][name]["Parameters"]["ExpressionAttributeValues"]
        sources = {v["S"] for k, v in values.items() if k.startswith(":f")}
        assert sources == {s.value for s in sources_of(OrderStatus(outcome))}, name


@pytest.mark.parametrize("name", sorted(OUTCOME_WRITES))
def test_saga_outcome_write_moves_only_forward_once_and_records_the_correlation_id(
    saga_definition: dict[str, Any], name: str
) -> None:
    """The state's own UpdateItem (rendered as Step Functions would) against every status, on moto:
    it moves only from an allowed status of the same attempt, never overwrites a terminal status,
    and a repeat changes nothing (no second history entry)."""
    outcome = OUTCOME_WRITES[name]
    parameters = dict(saga_definition["States"][name]["Parameters"])
    document = {**SAGA_INPUT, "payment_attempt": 2, "correlation_id": "cid-outcome"}
    request = _render_dynamodb(parameters, document, "2026-11-21T10:00:00.000Z")
    allowed = sources_of(OrderStatus(outcome))
    with mock_aws():
        ddb = boto3.client("dynamodb", region_name="us-east-1")
        ddb.create_table(
            TableName="orders",
            KeySchema=[{"AttributeName": "order_id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "order_id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        request["TableName"] = "orders"
        for status in OrderStatus:
            for attempt in (1, 2):
                ddb.put_item(
                    TableName="orders",
                    Item={
                        "order_id": {"S": "o-1"},
                        "status": {"S": status.value},
                        "payment_attempt": {"N": str(attempt)},
                        "history": {"L": []},
                    },
                )
                should_move = status in allowed and attempt == 2
                try:
                    ddb.update_item(**request)
                    moved = True
                except ddb.exceptions.ConditionalCheckFailedException:
                    moved = False
                assert moved == should_move, (status, attempt)
                item = ddb.get_item(TableName="orders", Key={"order_id": {"S": "o-1"}})["Item"]
                if not moved:
                    assert item["status"]["S"] == status.value and item["history"]["L"] == []
                    continue
                assert item["status"]["S"] == outcome
                assert item["updated_at"]["S"] == "2026-11-21T10:00:00.000Z"
                (entry,) = item["history"]["L"]
                assert entry["M"] == {
                    "status": {"S": outcome},
                    "at": {"S": "2026-11-21T10:00:00.000Z"},
                    "attempt": {"N": "2"},
                    "correlation_id": {"S": "cid-outcome"},
                }
                with pytest.raises(ddb.exceptions.ConditionalCheckFailedException):
                    ddb.update_item(**request)  # the repeat
                again = ddb.get_item(TableName="orders", Key={"order_id": {"S": "o-1"}})["Item"]
                assert len(again["history"]["L"]) == 1
        ddb.delete_item(TableName="orders", Key={"order_id": {"S": "o-1"}})
        with pytest.raises(ddb.exceptions.ConditionalCheckFailedException):
            ddb.update_item(**request)  # an unknown order is never created by the write
        assert "Item" not in ddb.get_item(TableName="orders", Key={"order_id": {"S": "o-1"}})


def test_saga_role_writes_only_updateitem_on_the_orders_table(dev: SynthResult) -> None:
    template = dev.template
    role = dev.logical_id(dev.stack.saga.state_machine.role)
    template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "Roles": [{"Ref": role}],
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        {
                            "Action": "dynamodb:UpdateItem",
                            "Effect": "Allow",
                            "Resource": {
                                "Fn::Join": [
                                    "",
                                    Match.array_with([":table/", {"Ref": dev.logical_id(dev.stack.orders_table)}]),
                                ]
                            },
                        }
                    ]
                )
            },
        },
    )
    actions = {a for s in dev.statements_of_role(role) for a in as_list(s["Action"]) if a.startswith("dynamodb:")}
    assert actions == {"dynamodb:UpdateItem"}
    assert not [s for s in dev.statements_of_role(role) if any(a.startswith("kms:") for a in as_list(s["Action"]))]


def test_saga_role_may_use_the_orders_key_in_prod(prod: SynthResult) -> None:
    """The orders table has a customer-managed key in prod: DynamoDB uses it on the caller's behalf."""
    role = prod.logical_id(prod.stack.saga.state_machine.role)
    key_statements = [
        s for s in prod.statements_of_role(role) if any(a.startswith("kms:") for a in as_list(s["Action"]))
    ]
    (statement,) = key_statements
    assert sorted(as_list(statement["Action"])) == [
        "kms:Decrypt",
        "kms:DescribeKey",
        "kms:Encrypt",
        "kms:GenerateDataKey",
    ]
    assert as_list(statement["Resource"]) == [{"Fn::GetAtt": [prod.logical_id(prod.stack.data_key), "Arn"]}]


# --- the budget with non-default retry policies (small stack, inline functions) -----------------


def _saga_template(inline_function: InlineFunctionFactory, **props: Any) -> dict[str, Any]:
    stack = Stack(App(), "SagaUnderTest")
    names = ("Reserve", "Charge", "Ship", "Cancel", "Refund", "Release", "Final")
    fns = {name: inline_function(stack, name, 30) for name in names}
    orders = dynamodb.Table(
        stack, "Orders", partition_key=dynamodb.Attribute(name="order_id", type=dynamodb.AttributeType.STRING)
    )
    OrderSaga(
        stack,
        "Saga",
        props=OrderSagaProps(
            reserve_inventory=fns["Reserve"],
            charge_payment=fns["Charge"],
            ship_order=fns["Ship"],
            cancel_shipment=fns["Cancel"],
            refund_payment=fns["Refund"],
            release_inventory=fns["Release"],
            finalize_order=fns["Final"],
            orders_table=orders,
            needs_attention_queue=sqs.Queue(stack, "NeedsAttention"),
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
