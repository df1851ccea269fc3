"""``ops repair`` is a command on the order, under its lease (issue 40, Build point 4; issue 41, "a scan in
``ops repair``").

- The repair moves the order itself (one conditional write under the order's lease, recorded in its
  history: who, when, why) *before* it starts anything.
- It is refused while an execution of the order runs, checked by DescribeExecution on the deterministic
  names (``order-<id>-attempt-<N>`` and the order's last repair), never by listing the state machine's
  executions: its AWS calls do not grow with the state machine's history.
- A parked order that no compensation touched (the sweeper parked it stuck, or its outcome write failed)
  can be finished (``redrive``): the repair moves it back to the status it was parked from.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from ops.repair import RepairRefused, repair
from ops.target import Target

REGION = "us-east-1"
AT = "2000-01-01T00:00:00Z"
PARKED_AFTER_COMPENSATION = ["RECEIVED", "INVENTORY_RESERVED", "PAYMENT_CHARGED", "COMPENSATING", "NEEDS_ATTENTION"]
PARKED_STUCK = ["RECEIVED", "INVENTORY_RESERVED", "PAYMENT_CHARGED", "NEEDS_ATTENTION"]


class Calls:
    """Every AWS API call the target's clients make, as ``Service.Operation``."""

    def __init__(self) -> None:
        self.made: list[str] = []

    def __call__(self, model: Any, **_: Any) -> None:
        self.made.append(f"{model.service_model.service_id}.{model.name}")


@pytest.fixture
def counted(aws: None) -> Iterator[tuple[Target, Calls]]:
    session = boto3.session.Session(region_name=REGION)
    calls = Calls()
    session.events.register("before-call", calls)
    ddb = session.client("dynamodb")
    ddb.create_table(
        TableName="orders",
        KeySchema=[{"AttributeName": "order_id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "order_id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    definition = {"StartAt": "Noop", "States": {"Noop": {"Type": "Pass", "End": True}}}
    arn = session.client("stepfunctions").create_state_machine(
        name="saga", definition=json.dumps(definition), roleArn="arn:aws:iam::123456789012:role/x"
    )["stateMachineArn"]
    yield Target({"OrdersTableName": "orders", "StateMachineArn": arn}, region=REGION, _session=session), calls


def _seed(target: Target, order_id: str, path: list[str], **extra: Any) -> None:
    from lambda_resilience.aws import to_item

    item = {
        "order_id": order_id,
        "status": path[-1],
        "payment_attempt": 1,
        "correlation_id": f"cid-{order_id}",
        "order": {"order_id": order_id},
        "updated_at": AT,
        "history": [{"status": s, "at": AT, "attempt": 1} for s in path],
        **extra,
    }
    target.client("dynamodb").put_item(TableName="orders", Item=to_item(item))


def _item(target: Target, order_id: str) -> dict[str, Any]:
    from lambda_resilience.aws import from_item

    return from_item(target.client("dynamodb").get_item(TableName="orders", Key={"order_id": {"S": order_id}})["Item"])


def _other_executions(target: Target, n: int) -> None:
    """The state machine's history: ``n`` executions of other orders, most of them ended."""
    sfn = target.client("stepfunctions")
    for i in range(n):
        arn = sfn.start_execution(stateMachineArn=target.output("StateMachineArn"), name=f"order-other-{i}-attempt-1")
        if i % 10:
            sfn.stop_execution(executionArn=arn["executionArn"])


def test_repair_calls_do_not_grow_with_the_state_machine_history(counted: tuple[Target, Calls]) -> None:
    target, calls = counted
    _seed(target, "o-small", PARKED_AFTER_COMPENSATION)
    _earlier_repairs(target, "o-small", 3)
    calls.made.clear()
    repair(target, "o-small", "compensate")
    small = list(calls.made)

    _other_executions(target, 250)  # three ListExecutions pages of 100
    _seed(target, "o-large", PARKED_AFTER_COMPENSATION)
    _earlier_repairs(target, "o-large", 3)
    calls.made.clear()
    last = repair(target, "o-large", "compensate")
    large = list(calls.made)

    assert last["execution_name"] == "order-o-large-attempt-1-repair-3"
    assert not [c for c in small + large if c.endswith(".ListExecutions")], large
    assert sorted(large) == sorted(small), (small, large)
    assert len(large) <= 6, large


def _earlier_repairs(target: Target, order_id: str, n: int) -> None:
    """``n`` repairs of the order, each ended (and the order parked again afterwards, say)."""
    for _ in range(n):
        started = repair(target, order_id, "compensate")
        target.client("stepfunctions").stop_execution(executionArn=started["execution_arn"])
        _seed(target, order_id, PARKED_AFTER_COMPENSATION, **_kept(target, order_id))


def _kept(target: Target, order_id: str) -> dict[str, Any]:
    """What a repair leaves on the order besides its status (parked again afterwards, say)."""
    item = _item(target, order_id)
    return {k: item[k] for k in ("last_repair", "lease") if k in item}


def test_repair_moves_the_order_under_its_lease_before_it_starts_anything(counted: tuple[Target, Calls]) -> None:
    target, _ = counted
    _seed(target, "o-1", PARKED_AFTER_COMPENSATION)
    seen_at_start: list[dict[str, Any]] = []

    def before_start(**_: Any) -> None:
        seen_at_start.append(_item(target, "o-1"))

    target.client("stepfunctions").meta.events.register("before-call.sfn.StartExecution", before_start)

    started = repair(target, "o-1", "compensate", reason="carrier confirmed the parcel never left")

    (item,) = seen_at_start
    assert item["status"] == "COMPENSATING"
    assert item["lease"]["holder"] == f"ops-repair:{started['execution_name']}"
    entry = item["history"][-1]
    assert {k: entry[k] for k in ("status", "attempt", "action", "reason", "execution")} == {
        "status": "COMPENSATING",
        "attempt": 1,
        "action": "repair-compensate",
        "reason": "carrier confirmed the parcel never left",
        "execution": started["execution_name"],
    }
    assert entry["by"].startswith("arn:aws:") and entry["at"] > AT


def test_repair_refused_while_the_orders_last_repair_runs(counted: tuple[Target, Calls]) -> None:
    """The running check names the order's executions (DescribeExecution): the attempt's own and its last repair."""
    target, calls = counted
    _seed(target, "o-1", PARKED_AFTER_COMPENSATION)
    first = repair(target, "o-1", "compensate")
    # The repair's lease expired (or was lost), its execution still runs.
    _seed(target, "o-1", ["COMPENSATING"], last_repair=_item(target, "o-1")["last_repair"])
    calls.made.clear()

    with pytest.raises(RepairRefused, match=f"execution {first['execution_name']} is still running") as refused:
        repair(target, "o-1", "compensate")
    assert refused.value.kind == "execution_running"

    assert "SFN.DescribeExecution" in calls.made and "SFN.StartExecution" not in calls.made
    assert _item(target, "o-1")["status"] == "COMPENSATING"  # nothing moved


def test_repair_redrive_finishes_a_parked_order_no_compensation_touched(counted: tuple[Target, Calls]) -> None:
    """Parked stuck by the sweeper (or after its outcome write failed), no compensation ran: the repair moves
    it back to the status it was parked from, and the saga finishes it (its steps answer from their records)."""
    target, _ = counted
    _seed(target, "o-1", PARKED_STUCK)

    started = repair(target, "o-1", "redrive", reason="sweeper parked it during the outage")

    item = _item(target, "o-1")
    assert (started["result"], item["status"]) == ("started", "PAYMENT_CHARGED")
    assert item["history"][-1]["action"] == "repair-redrive"


def test_repair_redrive_refused_for_a_parked_order_without_its_path(counted: tuple[Target, Calls]) -> None:
    target, _ = counted
    _seed(target, "o-1", ["NEEDS_ATTENTION"])

    with pytest.raises(RepairRefused, match="cannot tell which step it was parked from") as refused:
        repair(target, "o-1", "redrive")
    assert refused.value.kind == "unknown_step"

    assert _item(target, "o-1")["status"] == "NEEDS_ATTENTION"


def test_repair_refuses_a_reason_holding_customer_data_and_moves_nothing(counted: tuple[Target, Calls]) -> None:
    target, calls = counted
    _seed(target, "o-1", PARKED_AFTER_COMPENSATION)
    calls.made.clear()

    with pytest.raises(RepairRefused, match="must not hold customer data"):
        repair(target, "o-1", "compensate", reason="card 4242424242424242 was refunded")

    assert _item(target, "o-1")["status"] == "NEEDS_ATTENTION"
    assert not [c for c in calls.made if c in ("DynamoDB.UpdateItem", "SFN.StartExecution")]
