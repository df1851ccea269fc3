"""The saga's own glue under faults, through the real (synthesized) ASL on moto: an outcome write that
fails, a park that fails, a shipment whose outcome is unknown (cancelled before any refund), a parcel
the carrier will not recall (parked, never refunded)."""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import boto3
import pytest
from moto.dynamodb.exceptions import DynamodbException

from harness.run.run import PipelineRun, RunOptions, local_pipeline
from harness.workload.orders import make_order
from local_cloud.faults import ThrottledError
from local_cloud.template import CloudAssembly
from ops.repair import order_executions, repair

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def pipeline(assembly: CloudAssembly) -> Iterator[PipelineRun]:
    with local_pipeline(RunOptions(assembly_dir=assembly.outdir), assembly) as run:
        yield run


class AccessDenied(DynamodbException):
    """What DynamoDB answers a caller whose key or role no longer allows the write (not retried)."""

    def __init__(self) -> None:
        super().__init__(
            "com.amazonaws.dynamodb.v20120810#AccessDeniedException", message="Injected fault: access denied"
        )


@contextmanager
def failing_status_move(order_id: str, to: str, error: Callable[[], Exception]) -> Iterator[list[str]]:
    """While active, every UpdateItem that moves ``order_id`` to ``to`` raises ``error()`` (from moto's
    backend, so the caller sees what botocore would return from AWS). Yields the list of hits."""
    from moto.dynamodb.models import DynamoDBBackend

    original = DynamoDBBackend.update_item
    hits: list[str] = []

    @functools.wraps(original)
    def update_item(self: Any, *args: Any, **kwargs: Any) -> Any:
        key = kwargs.get("key") or (args[1] if len(args) > 1 else {})
        values = kwargs.get("expression_attribute_values") or (args[4] if len(args) > 4 else {}) or {}
        if key.get("order_id", {}).get("S") == order_id and values.get(":to", {}).get("S") == to:
            hits.append(to)
            raise error()
        return original(self, *args, **kwargs)

    with mock.patch.object(DynamoDBBackend, "update_item", update_item):
        yield hits


def submit_and_drain(run: PipelineRun, order: dict[str, Any], correlation_id: str) -> None:
    run.submit([(order, correlation_id)])
    run.drain()


def order_item(run: PipelineRun, order_id: str) -> dict[str, Any]:
    from lambda_resilience.aws import from_item

    item = boto3.client("dynamodb").get_item(TableName=run.orders_table, Key={"order_id": {"S": order_id}})["Item"]
    return from_item(item)


def ledger_ops(run: PipelineRun, order_id: str) -> list[dict[str, Any]]:
    from local_cloud.tables import scan_all

    return [i for i in scan_all(run.ledger_table) if i.get("order_id") == order_id and i.get("sk") == "op"]


def needs_attention(run: PipelineRun, order_id: str) -> list[dict[str, Any]]:
    """The needs-attention messages of ``order_id`` (bodies, plus the correlation_id attribute)."""
    queue_url = run.target().output("NeedsAttentionQueueUrl")
    found: list[dict[str, Any]] = []
    for _ in range(5):
        messages = (
            boto3.client("sqs")
            .receive_message(
                QueueUrl=queue_url, MessageAttributeNames=["All"], MaxNumberOfMessages=10, VisibilityTimeout=0
            )
            .get("Messages", [])
        )
        for m in messages:
            body = json.loads(m["Body"])
            if body.get("order_id") == order_id and m["MessageId"] not in {f["message_id"] for f in found}:
                attribute = m.get("MessageAttributes", {}).get("correlation_id", {}).get("StringValue")
                found.append({**body, "message_id": m["MessageId"], "attribute": attribute})
    return found


def only_execution(run: PipelineRun, order_id: str) -> dict[str, Any]:
    (execution,) = order_executions(run.target(), order_id)
    return dict(boto3.client("stepfunctions").describe_execution(executionArn=execution["executionArn"]))


def entered(execution_arn: str) -> list[str]:
    events = boto3.client("stepfunctions").get_execution_history(executionArn=execution_arn, maxResults=1000)["events"]
    return [e["stateEnteredEventDetails"]["name"] for e in events if e["type"].endswith("StateEntered")]


def new_order(order_id: str, country: str | None = None) -> dict[str, Any]:
    order = make_order(order_id, random.Random(order_id), "ok")
    if country is not None:
        order["shipping_address"] = {**order["shipping_address"], "country": country}
    return order


def test_saga_completed_write_failing_parks_the_shipped_order(pipeline: PipelineRun) -> None:
    """ShipOrder's own outcome write fails after the parcel left (access denied), then MarkCompleted's
    too: the order is parked and announced, never compensated (no cancel, no refund: decision 0024),
    never left half-recorded with a failed execution and nothing on the queue."""
    with failing_status_move("glue-mark", "COMPLETED", AccessDenied) as hits:
        submit_and_drain(pipeline, new_order("glue-mark"), "cid-glue-mark")
    assert hits == ["COMPLETED", "COMPLETED"]  # ShipOrder's write, then MarkCompleted's (not retried)
    assert order_item(pipeline, "glue-mark")["status"] == "NEEDS_ATTENTION"
    described = only_execution(pipeline, "glue-mark")
    assert described["status"] == "FAILED" and described["error"] == "CompensationFailed"
    assert entered(described["executionArn"])[-4:] == [
        "ShipOrder",
        "MarkCompleted",
        "MarkNeedsAttention",
        "CompensationFailed",
    ]
    ops = {op["action"]: op["status"] for op in ledger_ops(pipeline, "glue-mark")}
    assert ops == {"charge": "captured", "ship": "shipped"}  # the parcel left: nothing undone
    (message,) = needs_attention(pipeline, "glue-mark")
    assert message["attribute"] == "cid-glue-mark"
    assert "AccessDeniedException" in json.dumps(message["error"])


def test_saga_ship_outcome_write_throttled_is_recorded_by_mark_completed_never_compensated(
    pipeline: PipelineRun,
) -> None:
    """The parcel left and ShipOrder's own write was throttled (botocore gave up): the function says
    ``EffectDoneOutcomeNotWritten``, MarkCompleted records COMPLETED; nothing is cancelled or refunded,
    and the step is not rerun (one parcel, one carrier call)."""
    from harness.faults.cells import Rule
    from harness.faults.inject import FaultPlan, inject_plan

    plan = FaultPlan()
    plan.add("glue-throttled", [Rule("ShipOrder", "outcome_write", "ThrottlingException", "once", 1)])
    with inject_plan(plan):
        submit_and_drain(pipeline, new_order("glue-throttled"), "cid-glue-throttled")
    item = order_item(pipeline, "glue-throttled")
    assert item["status"] == "COMPLETED"
    assert (item["history"][-1]["status"], item["history"][-1]["correlation_id"]) == ("COMPLETED", "cid-glue-throttled")
    described = only_execution(pipeline, "glue-throttled")
    assert described["status"] == "SUCCEEDED"
    assert entered(described["executionArn"]) == ["ReserveInventory", "ChargePayment", "ShipOrder", "MarkCompleted"]
    ops = [(op["action"], op["status"]) for op in ledger_ops(pipeline, "glue-throttled")]
    assert sorted(ops) == [("charge", "captured"), ("ship", "shipped")]


def test_saga_park_failing_sends_the_last_resort_message(pipeline: PipelineRun) -> None:
    """MarkCompleted fails, then the park itself keeps failing (its status write is throttled past
    its retries): the state machine sends the needs-attention message itself, then fails."""
    with (
        failing_status_move("glue-lost", "COMPLETED", AccessDenied),
        failing_status_move("glue-lost", "NEEDS_ATTENTION", ThrottledError) as park_hits,
    ):
        submit_and_drain(pipeline, new_order("glue-lost"), "cid-glue-lost")
    assert len(park_hits) >= 4  # the park and its retries
    assert order_item(pipeline, "glue-lost")["status"] == "PAYMENT_CHARGED"  # the park could not record it ...
    described = only_execution(pipeline, "glue-lost")
    assert described["status"] == "FAILED" and described["error"] == "CompensationFailed"
    assert entered(described["executionArn"])[-3:] == [
        "MarkNeedsAttention",
        "NotifyNeedsAttention",
        "CompensationFailed",
    ]
    # ... the state machine announced it itself (the park's own attempts may have announced it too:
    # it announces before its status write, so a repeat is a duplicate message, never a lost one)
    messages = needs_attention(pipeline, "glue-lost")
    assert {m.get("source") for m in messages} <= {"saga-park", "saga-last-resort"}
    (message,) = [m for m in messages if m.get("source") == "saga-last-resort"]
    assert message["attribute"] == message["correlation_id"] == "cid-glue-lost"
    assert (message["order_id"], message["payment_attempt"]) == ("glue-lost", 1)
    assert "AccessDeniedException" in json.dumps(message["error"])  # the error that sent it to the park
    assert "order-glue-lost-attempt-1" in message["reason"]
    assert not {"payment_token", "shipping_address", "customer_id"} & set(message)
    assert any("ExecutionsFailedAlarm" in a for a in pipeline.evaluate_alarms())


@contextmanager
def ship_dies_after_the_parcel(order_id: str) -> Iterator[None]:
    """Every ShipOrder attempt books the parcel (the same one: the carrier's key) and dies before its
    outcome write: to Step Functions an unknown outcome (Sandbox.Timedout), retried, then caught."""
    from harness.faults.cells import Rule
    from harness.faults.inject import FaultPlan, inject_plan

    plan = FaultPlan()
    plan.add(order_id, [Rule("ShipOrder", "outcome_write", "crash")])
    with inject_plan(plan):
        yield


def test_saga_ship_outcome_unknown_parks_with_the_parcel_live_then_a_compensate_recalls_it(
    pipeline: PipelineRun,
) -> None:
    """The carrier shipped but ShipOrder kept dying after it, before its outcome write (Sandbox.Timedout): the
    outage retrier waits, then the order parks with nothing undone (decision 0032: an unknown outcome is a
    person's call, never a cancelled sale). The operator's compensate repair recalls the parcel first
    (CancelShipment), then the money goes back. Never refunded while shipping; one parcel."""
    with ship_dies_after_the_parcel("glue-ship"):
        submit_and_drain(pipeline, new_order("glue-ship"), "cid-glue-ship")
    assert order_item(pipeline, "glue-ship")["status"] == "NEEDS_ATTENTION"
    assert entered(only_execution(pipeline, "glue-ship")["executionArn"])[-3:] == [
        "ShipOrder",
        "MarkNeedsAttention",
        "CompensationFailed",
    ]
    assert {op["action"]: op["status"] for op in ledger_ops(pipeline, "glue-ship")} == {
        "charge": "captured",
        "ship": "shipped",
    }
    result = repair(pipeline.target(), "glue-ship", "compensate", reason="customer cancelled during the outage")
    pipeline.drain()
    assert order_item(pipeline, "glue-ship")["status"] == "COMPENSATED"
    assert entered(result["execution_arn"])[-3:] == ["CancelShipment", "RefundPayment", "ReleaseInventory"]
    ops = {op["action"]: op["status"] for op in ledger_ops(pipeline, "glue-ship")}
    assert ops == {"charge": "captured", "ship": "cancelled", "refund": "refunded"}


def test_saga_shipment_not_cancellable_parks_without_refund(pipeline: PipelineRun) -> None:
    """The same unknown outcome for a parcel already handed over (sandbox country XH), then the operator's
    compensate repair: the carrier refuses the cancel, so the order is parked again at once, the money kept and
    the stock not released."""
    with ship_dies_after_the_parcel("glue-gone"):
        submit_and_drain(pipeline, new_order("glue-gone", country="XH"), "cid-glue-gone")
    assert order_item(pipeline, "glue-gone")["status"] == "NEEDS_ATTENTION"
    result = repair(pipeline.target(), "glue-gone", "compensate", reason="customer cancelled during the outage")
    pipeline.drain()
    assert order_item(pipeline, "glue-gone")["status"] == "NEEDS_ATTENTION"
    described = boto3.client("stepfunctions").describe_execution(executionArn=result["execution_arn"])
    assert described["status"] == "FAILED" and described["error"] == "CompensationFailed"
    assert entered(result["execution_arn"])[-3:] == ["CancelShipment", "MarkNeedsAttention", "CompensationFailed"]
    ops = {op["action"]: op["status"] for op in ledger_ops(pipeline, "glue-gone")}
    assert ops == {"charge": "captured", "ship": "shipped"}  # no refund of a parcel that ships
    messages = needs_attention(pipeline, "glue-gone")
    assert "ShipmentNotCancellable" in json.dumps(messages[-1]["error"])
    assert all(m["attribute"] == "cid-glue-gone" for m in messages)


def test_saga_execution_stopped_by_an_operator_alarms(pipeline: PipelineRun) -> None:
    """An ABORTED execution (StopExecution in ChargePayment) leaves an order half-done: ExecutionsAborted > 0 alarms."""
    from harness.faults.cells import Rule
    from harness.faults.inject import FaultPlan, inject_plan

    assert not any("ExecutionsAbortedAlarm" in a for a in pipeline.evaluate_alarms())
    plan = FaultPlan()
    plan.add("glue-stop", [Rule("ChargePayment", "stop", first_execution_only=True)])
    with inject_plan(plan):
        submit_and_drain(pipeline, new_order("glue-stop"), "cid-glue-stop")
    assert only_execution(pipeline, "glue-stop")["status"] == "ABORTED"
    assert any("ExecutionsAbortedAlarm" in a for a in pipeline.evaluate_alarms())


def test_saga_execution_stopped_after_idle_time_pages_within_a_minute(pipeline: PipelineRun) -> None:
    """AWS/States ExecutionsAborted counts an execution in the period it stopped
    (https://docs.aws.amazon.com/step-functions/latest/dg/procedure-cw-metrics.html): once simulated
    time has run ahead of the wall clock (visibility timeouts, idle jumps), a stop still pages within
    a minute of the stop, on the simulated clock."""
    from harness.faults.cells import Rule
    from harness.faults.inject import FaultPlan, inject_plan

    pipeline.clock.advance(3600.0)  # an hour of idle time: the simulated clock runs ahead of moto's
    assert not any("ExecutionsAbortedAlarm" in a for a in pipeline.evaluate_alarms())
    before = pipeline.clock.now()
    plan = FaultPlan()
    plan.add("glue-stop-late", [Rule("ChargePayment", "stop", first_execution_only=True)])
    with inject_plan(plan):
        submit_and_drain(pipeline, new_order("glue-stop-late"), "cid-glue-stop-late")
    stopped = only_execution(pipeline, "glue-stop-late")
    assert stopped["status"] == "ABORTED"
    assert any("ExecutionsAbortedAlarm" in a for a in pipeline.evaluate_alarms())
    (entered, *_) = [
        at
        for name, state, at in pipeline.alarm_evaluator.transitions
        if "ExecutionsAbortedAlarm" in name and state == "ALARM" and at >= before
    ]
    assert entered - before <= 60.0
    # It notifies through OrdersAtRisk (one notification per incident, decision 0030): the composite is in ALARM
    # and its page, this incident's or an open one's, was delivered.
    assert "ALARM" in {s for n, s in pipeline.alarm_evaluator.composite_states().items() if "OrdersAtRisk" in n}
    pages = [n for n in pipeline.cloud.alarm_actions.history if "OrdersAtRisk" in n.alarm and n.state == "ALARM"]
    assert pages and pages[-1].delivered and pages[-1].at <= entered
