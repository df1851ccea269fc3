"""``ops repair`` cannot do harm: each action at each order status, and how the CLI reports a refusal.

- ``redrive`` only while no compensation ran for the attempt (never COMPENSATING, NEEDS_ATTENTION,
  or a history that shows either): a redrive after a refund would ship an order paid back.
- ``compensate`` from every non-terminal status, NEEDS_ATTENTION and SHIPPED included (the saga
  cancels the parcel before any refund).
- terminal orders, unknown orders and orders with a running execution: refused, nothing started.

A refusal is one line on stderr and exit status 2; a start prints JSON and exits 0.
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from ops import cli
from ops.repair import RepairRefused, repair
from ops.target import Target

REGION = "us-east-1"
PREFIX = "python -m ops: error: "
FORWARD = ["RECEIVED", "INVENTORY_RESERVED", "PAYMENT_CHARGED", "SHIPPED"]
ALL_STATUSES = [*FORWARD, "COMPENSATING", "NEEDS_ATTENTION", "COMPLETED", "COMPENSATED"]
#: The path a saga takes to each status (the item's history).
PATHS = {
    **{s: FORWARD[: FORWARD.index(s) + 1] for s in FORWARD},
    "COMPLETED": [*FORWARD, "COMPLETED"],
    "COMPENSATING": ["RECEIVED", "INVENTORY_RESERVED", "COMPENSATING"],
    "NEEDS_ATTENTION": ["RECEIVED", "INVENTORY_RESERVED", "PAYMENT_CHARGED", "COMPENSATING", "NEEDS_ATTENTION"],
    "COMPENSATED": ["RECEIVED", "INVENTORY_RESERVED", "COMPENSATING", "COMPENSATED"],
}
#: action -> the statuses from which it starts an execution; every other status is refused.
ALLOWED = {
    "redrive": set(FORWARD),
    "compensate": {*FORWARD, "COMPENSATING", "NEEDS_ATTENTION"},
}


@pytest.fixture
def target(aws: None) -> Target:
    ddb = boto3.client("dynamodb", region_name=REGION)
    ddb.create_table(
        TableName="orders",
        KeySchema=[{"AttributeName": "order_id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "order_id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    sfn = boto3.client("stepfunctions", region_name=REGION)
    definition = {"StartAt": "Noop", "States": {"Noop": {"Type": "Pass", "End": True}}}
    arn = sfn.create_state_machine(
        name="saga", definition=json.dumps(definition), roleArn="arn:aws:iam::123456789012:role/x"
    )["stateMachineArn"]
    return Target({"OrdersTableName": "orders", "StateMachineArn": arn}, region=REGION)


def _seed(target: Target, order_id: str, status: str, history: list[dict[str, Any]] | None = None, attempt: int = 1):
    from lambda_resilience.aws import to_item

    item = {
        "order_id": order_id,
        "status": status,
        "payment_attempt": attempt,
        "correlation_id": f"cid-{order_id}",
        "order": {"order_id": order_id},
        "updated_at": "2000-01-01T00:00:00Z",
        "history": history
        if history is not None
        else [{"status": s, "at": "2000-01-01T00:00:00Z", "attempt": attempt} for s in PATHS[status]],
    }
    target.client("dynamodb").put_item(TableName="orders", Item=to_item(item))


def _executions(target: Target) -> list[dict[str, Any]]:
    sfn = target.client("stepfunctions")
    return sfn.list_executions(stateMachineArn=target.output("StateMachineArn"))["executions"]


def _cli(target: Target, monkeypatch: pytest.MonkeyPatch, capsys, *argv: str) -> tuple[int, str, str]:
    monkeypatch.setattr("ops.target.Target.from_stack", classmethod(lambda cls, *a, **k: target))
    code = cli.main(["repair", *argv, "--region", REGION])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("status", ALL_STATUSES)
@pytest.mark.parametrize("action", ["redrive", "compensate"])
def test_repair_each_action_at_each_status(target: Target, monkeypatch, capsys, action: str, status: str) -> None:
    order_id = f"o-{status.lower().replace('_', '-')}"
    _seed(target, order_id, status)

    code, out, err = _cli(target, monkeypatch, capsys, order_id, "--action", action)

    if status in ALLOWED[action]:
        assert code == 0, err
        started = json.loads(out)
        assert (started["result"], started["action"], started["status"]) == ("started", action, status)
        (execution,) = _executions(target)
        assert execution["name"] == f"order-{order_id}-attempt-1-repair-0"
        described = target.client("stepfunctions").describe_execution(executionArn=execution["executionArn"])
        assert json.loads(described["input"]) == {
            "order_id": order_id,
            "payment_attempt": 1,
            "correlation_id": f"cid-{order_id}",
            "compensate": action == "compensate",
        }
    else:
        assert code == 2
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith(PREFIX) and "Traceback" not in err, err
        assert f"refusing to {action} order {order_id}" in lines[0]
        assert out == ""
        assert _executions(target) == []


@pytest.mark.parametrize("status", ["COMPENSATING", "NEEDS_ATTENTION"])
def test_repair_redrive_refusal_says_why_and_what_to_do_instead(target: Target, monkeypatch, capsys, status) -> None:
    _seed(target, "o-1", status)

    code, _, err = _cli(target, monkeypatch, capsys, "o-1", "--action", "redrive")

    assert code == 2
    assert "compensation ran" in err and "use --action compensate" in err


@pytest.mark.parametrize("status", ["COMPLETED", "COMPENSATED"])
def test_repair_terminal_refusal_says_there_is_nothing_to_repair(target: Target, status) -> None:
    _seed(target, "o-1", status)
    with pytest.raises(RepairRefused, match=f"already {status} \\(terminal\\); nothing to repair") as refused:
        repair(target, "o-1", "compensate")
    assert refused.value.kind == "terminal"


def test_repair_redrive_refused_when_the_attempt_history_shows_a_compensation(target: Target) -> None:
    """Whatever the current status says: a compensation in the attempt's history forbids a redrive."""
    history = [{"status": s, "attempt": 1} for s in ("RECEIVED", "INVENTORY_RESERVED", "COMPENSATING")]
    _seed(target, "o-1", "SHIPPED", history=history)

    with pytest.raises(RepairRefused, match="was COMPENSATING") as refused:
        repair(target, "o-1", "redrive")
    assert refused.value.kind == "compensation_ran"
    assert repair(target, "o-1", "compensate")["result"] == "started"


def test_repair_redrive_allowed_when_only_an_earlier_attempt_was_compensated(target: Target) -> None:
    """Attempt 1 was declined and compensated; attempt 2 (a new card) is stuck before any compensation."""
    history = [
        {"status": "RECEIVED", "attempt": 1},
        {"status": "COMPENSATING", "attempt": 1},
        {"status": "COMPENSATED", "attempt": 1},
        {"status": "RECEIVED", "attempt": 2},
    ]
    _seed(target, "o-1", "RECEIVED", history=history, attempt=2)

    started = repair(target, "o-1", "redrive")

    assert started["execution_name"] == "order-o-1-attempt-2-repair-0"


@pytest.mark.parametrize("action", ["redrive", "compensate"])
def test_repair_refused_while_an_execution_of_the_attempt_runs(
    target: Target, monkeypatch, capsys, action: str
) -> None:
    _seed(target, "o-1", "PAYMENT_CHARGED")
    sfn = target.client("stepfunctions")
    sfn.start_execution(stateMachineArn=target.output("StateMachineArn"), name="order-o-1-attempt-1", input="{}")

    code, _, err = _cli(target, monkeypatch, capsys, "o-1", "--action", action)

    assert code == 2
    assert "execution order-o-1-attempt-1 is still running" in err and "wait for it to finish" in err
    assert len(_executions(target)) == 1


def test_repair_unknown_order_is_refused_in_one_line(target: Target, monkeypatch, capsys) -> None:
    code, out, err = _cli(target, monkeypatch, capsys, "nobody", "--action", "redrive")

    assert (code, out) == (2, "")
    assert err.strip() == f"{PREFIX}cannot repair order nobody: not in the orders table; check the order ID and --stack"


def test_repair_second_repair_gets_the_next_name(target: Target) -> None:
    _seed(target, "o-1", "NEEDS_ATTENTION")
    sfn = target.client("stepfunctions")
    first = repair(target, "o-1", "compensate")
    sfn.stop_execution(executionArn=first["execution_arn"])  # it ended (parked again, say)

    second = repair(target, "o-1", "compensate")

    assert (first["execution_name"], second["execution_name"]) == (
        "order-o-1-attempt-1-repair-0",
        "order-o-1-attempt-1-repair-1",
    )


def test_repair_refused_while_the_sweeper_holds_the_order(target: Target) -> None:
    """The sweeper took the order's lease to finish it (SHIPPED -> COMPLETED): a compensate racing
    it starts nothing (issue 28: COMPLETED, money back, parcel recalled, nobody told)."""
    from order_domain import lease

    _seed(target, "o-1", "SHIPPED")
    client = target.client("dynamodb")
    assert lease.acquire(
        client, "orders", "o-1", holder="sweeper", seconds=120, status="SHIPPED", updated_at="2000-01-01T00:00:00Z"
    )

    with pytest.raises(RepairRefused, match="sweeper is handling it") as refused:
        repair(target, "o-1", "compensate")
    assert refused.value.kind == "order_busy"

    assert _executions(target) == []


def test_repair_holds_the_order_until_its_execution_ends(target: Target) -> None:
    _seed(target, "o-1", "PAYMENT_CHARGED")

    started = repair(target, "o-1", "compensate")

    item = target.client("dynamodb").get_item(TableName="orders", Key={"order_id": {"S": "o-1"}})["Item"]
    assert item["lease"]["M"]["holder"]["S"] == f"ops-repair:{started['execution_name']}"


def test_repair_refusal_names_a_known_kind() -> None:
    """A refusal's kind is one of ``REFUSALS`` (a caller counts them without reading the message)."""
    from ops.repair import REFUSALS

    assert RepairRefused("refusing to redrive order o-1: ...", "compensation_ran").kind in REFUSALS
    with pytest.raises(ValueError, match="unknown refusal kind"):
        RepairRefused("refusing ...", "because")  # type: ignore[arg-type]
