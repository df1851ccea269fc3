"""Every saga path through the real (synthesized) ASL, on moto: compensations, parking, sweeper, repair."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from harness.run.run import PipelineRun, RunOptions, local_pipeline
from harness.workload.orders import make_order
from local_cloud.template import CloudAssembly
from ops.repair import RepairRefused, order_executions, repair

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def pipeline(assembly: CloudAssembly) -> Iterator[PipelineRun]:
    with local_pipeline(RunOptions(assembly_dir=assembly.outdir), assembly) as run:
        yield run


def submit_and_drain(run: PipelineRun, *orders: tuple[dict[str, Any], str | None]) -> None:
    run.submit(list(orders))
    run.drain()


def order_item(run: PipelineRun, order_id: str) -> dict[str, Any]:
    item = boto3.client("dynamodb").get_item(TableName=run.orders_table, Key={"order_id": {"S": order_id}})["Item"]
    from lambda_resilience.aws import from_item

    return from_item(item)


def ledger_ops(run: PipelineRun, order_id: str) -> list[dict[str, Any]]:
    from local_cloud.tables import scan_all

    return [i for i in scan_all(run.ledger_table) if i.get("order_id") == order_id]


def new_order(order_id: str, kind: str) -> dict[str, Any]:
    return make_order(order_id, random.Random(order_id), kind)


def test_saga_completed_order(pipeline: PipelineRun) -> None:
    submit_and_drain(pipeline, (new_order("path-ok", "ok"), "cid-path-ok"))
    assert order_item(pipeline, "path-ok")["status"] == "COMPLETED"
    shipped = [op for op in ledger_ops(pipeline, "path-ok") if op.get("action") == "ship" and op.get("sk") == "op"]
    assert [op["status"] for op in shipped] == ["shipped"]


@pytest.mark.parametrize(
    ("kind", "refund_status"),
    [
        ("declined", None),  # declined: no refund at all, stock released
        ("undeliverable", "refunded"),
        ("partial_capture", "refunded"),
        ("auth_only", "voided"),
        ("out_of_stock", None),
    ],
)
def test_saga_failure_is_compensated(pipeline: PipelineRun, kind: str, refund_status: str | None) -> None:
    order_id = f"path-{kind}"
    submit_and_drain(pipeline, (new_order(order_id, kind), f"cid-{order_id}"))
    assert order_item(pipeline, order_id)["status"] == "COMPENSATED"
    ops = [op for op in ledger_ops(pipeline, order_id) if op.get("sk") == "op"]
    refunds = [op for op in ops if op.get("action") == "refund"]
    if refund_status is None:
        assert all(op["status"] != "refunded" for op in refunds)
    else:
        assert [op["status"] for op in refunds] == [refund_status]
        charge = next(op for op in ops if op.get("action") == "charge")
        assert refunds[0]["amount_cents"] == charge["captured_cents"]
    reservation = boto3.client("dynamodb").get_item(
        TableName=pipeline.inventory_table, Key={"pk": {"S": f"reservation#{order_id}#attempt-1"}}
    )["Item"]
    assert reservation["status"]["S"] == "RELEASED"


def test_saga_refund_failing_twice_then_succeeding_compensates(pipeline: PipelineRun) -> None:
    submit_and_drain(pipeline, (new_order("path-flaky", "refund_flaky"), "cid-path-flaky"))
    assert order_item(pipeline, "path-flaky")["status"] == "COMPENSATED"
    requests = [
        r
        for r in ledger_ops(pipeline, "path-flaky")
        if str(r.get("pk")).startswith("req#payment") and r["action"] == "refund"
    ]
    assert [r["outcome"] for r in requests] == ["error", "error", "refunded"]


def test_saga_refund_always_failing_parks_order_and_alarms(pipeline: PipelineRun) -> None:
    submit_and_drain(pipeline, (new_order("path-broken", "refund_fails"), "cid-path-broken"))
    order = order_item(pipeline, "path-broken")
    assert order["status"] == "NEEDS_ATTENTION"
    assert order["last_error"]["correlation_id"] == "cid-path-broken"
    assert "TransientStepError" in json.dumps(order["last_error"])
    execution = order_executions(pipeline.target(), "path-broken")[0]
    sfn = boto3.client("stepfunctions")
    described = sfn.describe_execution(executionArn=execution["executionArn"])
    assert described["status"] == "FAILED" and described.get("error") == "CompensationFailed"
    queue_url = pipeline.target().output("NeedsAttentionQueueUrl")
    messages = boto3.client("sqs").receive_message(
        QueueUrl=queue_url, MessageAttributeNames=["All"], MaxNumberOfMessages=10, VisibilityTimeout=0
    )["Messages"]
    parked = [m for m in messages if json.loads(m["Body"])["order_id"] == "path-broken"]
    assert len(parked) == 1
    assert parked[0]["MessageAttributes"]["correlation_id"]["StringValue"] == "cid-path-broken"
    alarms = pipeline.evaluate_alarms()
    assert any("NeedsAttentionQueueQueueDepthAlarm" in a for a in alarms)
    reservation = boto3.client("dynamodb").get_item(
        TableName=pipeline.inventory_table, Key={"pk": {"S": "reservation#path-broken#attempt-1"}}
    )["Item"]
    assert reservation["status"]["S"] == "RELEASED"  # a failed refund still gives the stock back


def test_saga_duplicate_intake_message_starts_one_execution(pipeline: PipelineRun) -> None:
    order = new_order("path-dup", "ok")
    submit_and_drain(pipeline, (order, "cid-path-dup"), (order, "cid-path-dup"), (order, None))
    executions = order_executions(pipeline.target(), "path-dup")
    assert [e["name"] for e in executions] == ["order-path-dup-attempt-1"]
    assert order_item(pipeline, "path-dup")["status"] == "COMPLETED"
    charges = [op for op in ledger_ops(pipeline, "path-dup") if op.get("sk") == "op" and op["action"] == "charge"]
    assert len(charges) == 1


def test_saga_stuck_order_found_by_sweeper_and_repaired(pipeline: PipelineRun) -> None:
    # Intake recorded the order, then died before starting the saga: RECEIVED, an hour old.
    order = new_order("path-stuck", "ok")
    boto3.client("dynamodb").put_item(
        TableName=pipeline.orders_table,
        Item={
            "order_id": {"S": "path-stuck"},
            "status": {"S": "RECEIVED"},
            "correlation_id": {"S": "cid-path-stuck"},
            "order": {"S": "placeholder"},
            "created_at": {"S": "2000-01-01T00:00:00Z"},
            "updated_at": {"S": "2000-01-01T00:00:00Z"},
            "history": {"L": []},
        },
    )
    from lambda_resilience.aws import to_item

    boto3.client("dynamodb").update_item(
        TableName=pipeline.orders_table,
        Key={"order_id": {"S": "path-stuck"}},
        UpdateExpression="SET #o = :o",
        ExpressionAttributeNames={"#o": "order"},
        ExpressionAttributeValues=to_item({":o": order}),
    )
    # The sweeper parks it (no execution runs for it) and announces it under its correlation ID.
    assert "path-stuck" in pipeline.sweep()
    assert any("StuckOrdersAlarm" in a for a in pipeline.evaluate_alarms())
    assert order_item(pipeline, "path-stuck")["status"] == "NEEDS_ATTENTION"
    queue_url = pipeline.target().output("NeedsAttentionQueueUrl")
    messages = boto3.client("sqs").receive_message(
        QueueUrl=queue_url, MessageAttributeNames=["All"], MaxNumberOfMessages=10, VisibilityTimeout=0
    )["Messages"]
    (parked,) = [json.loads(m["Body"]) for m in messages if json.loads(m["Body"])["order_id"] == "path-stuck"]
    assert (parked["source"], parked["correlation_id"]) == ("sweeper", "cid-path-stuck")

    # A parked order is not redriven (ops repair refuses); it is compensated.
    target = pipeline.target()
    with pytest.raises(RepairRefused, match="use --action compensate"):
        repair(target, "path-stuck", "redrive")
    first = repair(target, "path-stuck", "compensate")
    assert first["result"] == "started"
    pipeline.drain()
    assert order_item(pipeline, "path-stuck")["status"] == "COMPENSATED"
    with pytest.raises(RepairRefused, match="already COMPENSATED"):
        repair(target, "path-stuck", "compensate")

    assert "path-stuck" not in pipeline.sweep()
    # The alarm is Maximum of StuckOrders over 10 minutes (two sweeps, decision 0030), evaluated as CloudWatch
    # does: it clears once the period that held the stuck count has passed and the sweeper reports none.
    for _ in range(2):
        pipeline.clock.advance(300.0)
        assert "path-stuck" not in pipeline.sweep()
    assert not any("StuckOrdersAlarm" in a for a in pipeline.evaluate_alarms())


def test_saga_declined_then_attempt_2_with_a_good_card_completes(pipeline: PipelineRun) -> None:
    """The seeds' ``order-123-payment-attempt-2``: a declined customer pays again with another card."""
    first = new_order("path-retry", "declined")
    submit_and_drain(pipeline, (first, "cid-path-retry-1"))
    assert order_item(pipeline, "path-retry")["status"] == "COMPENSATED"

    second = {**first, "payment_attempt": 2, "payment_token": "tok_visa_second_card"}
    submit_and_drain(pipeline, (second, "cid-path-retry-2"), (second, "cid-path-retry-2"))  # with a repeat

    item = order_item(pipeline, "path-retry")
    assert item["status"] == "COMPLETED" and item["payment_attempt"] == 2
    assert [(a["attempt"], a["correlation_id"]) for a in item["attempts"]] == [
        (1, "cid-path-retry-1"),
        (2, "cid-path-retry-2"),
    ]
    assert item["attempts"][1]["previous_outcome"] == "COMPENSATED"
    assert [(h["attempt"], h["status"]) for h in item["history"] if h.get("attempt") == 2][-1] == (2, "COMPLETED")
    names = sorted(e["name"] for e in order_executions(pipeline.target(), "path-retry"))
    assert names == ["order-path-retry-attempt-1", "order-path-retry-attempt-2"]
    charges = [op for op in ledger_ops(pipeline, "path-retry") if op.get("sk") == "op" and op["action"] == "charge"]
    assert sorted(op["status"] for op in charges) == ["captured", "declined"]  # one charge took money
    shipments = [op for op in ledger_ops(pipeline, "path-retry") if op.get("sk") == "op" and op["action"] == "ship"]
    assert len(shipments) == 1


def test_saga_unknown_order_started_directly_fails_with_no_side_effect(pipeline: PipelineRun) -> None:
    sfn = boto3.client("stepfunctions")
    arn = sfn.start_execution(
        stateMachineArn=pipeline.target().output("StateMachineArn"),
        name="order-path-ghost-attempt-1",
        input=json.dumps({"order_id": "path-ghost", "payment_attempt": 1, "correlation_id": "cid-ghost"}),
    )["executionArn"]
    pipeline.drain()

    described = sfn.describe_execution(executionArn=arn)
    assert described["status"] == "FAILED" and described.get("error") == "InputRefused"
    assert ledger_ops(pipeline, "path-ghost") == []
    from local_cloud.tables import scan_all

    assert [i for i in scan_all(pipeline.inventory_table) if "path-ghost" in str(i.get("pk"))] == []


def test_saga_execution_history_holds_no_customer_data(pipeline: PipelineRun) -> None:
    order = new_order("path-private", "undeliverable")
    order = {
        **order,
        "payment_token": "tok_visa_PRIVATE77",
        "shipping_address": {**order["shipping_address"], "name": "Private Person", "line1": "7 Hidden Lane"},
    }
    submit_and_drain(pipeline, (order, "cid-path-private"))
    assert order_item(pipeline, "path-private")["status"] == "COMPENSATED"

    sfn = boto3.client("stepfunctions")
    history = [
        json.dumps(event, default=str)
        for execution in order_executions(pipeline.target(), "path-private")
        for event in sfn.get_execution_history(executionArn=execution["executionArn"])["events"]
    ]
    assert history
    for secret in ("tok_visa_PRIVATE77", "Private Person", "7 Hidden Lane"):
        assert not [event for event in history if secret in event]


def _entered(execution_arn: str) -> list[str]:
    events = boto3.client("stepfunctions").get_execution_history(executionArn=execution_arn, maxResults=1000)["events"]
    return [e["stateEnteredEventDetails"]["name"] for e in events if e["type"].endswith("StateEntered")]


def test_saga_completed_order_written_by_ship_order_in_three_states(pipeline: PipelineRun) -> None:
    """ShipOrder records the outcome itself (decision 0024): SHIPPED and COMPLETED in one write, the
    correlation ID on the outcome's entry; the execution ends there (MarkCompleted is the error path's)."""
    submit_and_drain(pipeline, (new_order("path-direct", "ok"), "cid-path-direct"))
    item = order_item(pipeline, "path-direct")
    assert item["status"] == "COMPLETED"
    last = item["history"][-1]
    assert (last["status"], last["attempt"], last["correlation_id"]) == ("COMPLETED", 1, "cid-path-direct")
    assert [h["status"] for h in item["history"]][-2:] == ["SHIPPED", "COMPLETED"]
    assert [h["status"] for h in item["history"]].count("COMPLETED") == 1
    (execution,) = order_executions(pipeline.target(), "path-direct")
    assert _entered(execution["executionArn"]) == ["ReserveInventory", "ChargePayment", "ShipOrder"]


def test_saga_repeated_execution_never_rewrites_the_outcome(pipeline: PipelineRun) -> None:
    """A second execution for a completed order: every step answers from its idempotency record and
    ShipOrder's conditional outcome write finds it already COMPLETED, so the order keeps its one entry."""
    submit_and_drain(pipeline, (new_order("path-again", "ok"), "cid-path-again"))
    before = order_item(pipeline, "path-again")
    sfn = boto3.client("stepfunctions")
    arn = sfn.start_execution(
        stateMachineArn=pipeline.target().output("StateMachineArn"),
        name="order-path-again-attempt-1-repeat",
        input=json.dumps({"order_id": "path-again", "payment_attempt": 1, "correlation_id": "cid-path-again"}),
    )["executionArn"]
    pipeline.drain()
    assert sfn.describe_execution(executionArn=arn)["status"] == "SUCCEEDED"
    assert _entered(arn)[-1] == "ShipOrder"
    after = order_item(pipeline, "path-again")
    assert after["status"] == "COMPLETED"
    assert after["history"] == before["history"]


def test_saga_late_compensated_write_never_moves_a_completed_order_back(pipeline: PipelineRun) -> None:
    submit_and_drain(pipeline, (new_order("path-late", "ok"), "cid-path-late"))
    before = order_item(pipeline, "path-late")
    sfn = boto3.client("stepfunctions")
    # An operator's compensate request for an order that completed meanwhile: the compensations find
    # the order terminal (their status moves are no-ops), the last one cannot record COMPENSATED
    # (EffectDoneOutcomeNotWritten) and MarkCompensated's condition fails.
    arn = sfn.start_execution(
        stateMachineArn=pipeline.target().output("StateMachineArn"),
        name="order-path-late-attempt-1-late",
        input=json.dumps(
            {"order_id": "path-late", "payment_attempt": 1, "correlation_id": "cid-path-late", "compensate": True}
        ),
    )["executionArn"]
    pipeline.drain()
    assert _entered(arn)[-2:] == ["MarkCompensated", "OutcomeAlreadyRecorded"]
    after = order_item(pipeline, "path-late")
    assert after["status"] == "COMPLETED"
    assert [h["status"] for h in after["history"]] == [h["status"] for h in before["history"]]


def test_saga_repair_compensate_goes_straight_to_the_compensations(pipeline: PipelineRun) -> None:
    """``ops repair --action compensate`` on an order stuck before any step ran: no Route state any more,
    ReserveInventory refuses the request before its idempotency record and the catch runs the compensations."""
    order = new_order("path-undo", "ok")
    from lambda_resilience.aws import to_item

    item = {
        "order_id": "path-undo",
        "status": "RECEIVED",
        "payment_attempt": 1,
        "correlation_id": "cid-path-undo",
        "order": order,
        "created_at": "2000-01-01T00:00:00Z",
        "updated_at": "2000-01-01T00:00:00Z",
        "history": [],
    }
    boto3.client("dynamodb").put_item(TableName=pipeline.orders_table, Item=to_item(item))
    result = repair(pipeline.target(), "path-undo", "compensate")
    assert result["result"] == "started"
    pipeline.drain()
    assert order_item(pipeline, "path-undo")["status"] == "COMPENSATED"
    assert _entered(result["execution_arn"]) == [
        "ReserveInventory",
        "CancelShipment",  # no refund of a possibly shipped order without cancelling its shipment first
        "RefundPayment",
        "ReleaseInventory",  # records COMPENSATED itself (decision 0024)
    ]
    ops = ledger_ops(pipeline, "path-undo")
    assert not [op for op in ops if op.get("status") in ("captured", "refunded", "shipped")], ops  # nothing moved
