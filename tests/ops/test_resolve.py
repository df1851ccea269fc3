"""``ops resolve <order-id> --outcome completed|compensated --reason "..."``: the exit of a parked order
after a person acted outside the system (refunded in the processor's dashboard, let the customer keep a
parcel the carrier would not cancel). One conditional write of the order, recorded in its history (who,
when, why), never customer data; refused (exit 2, one line) for anything but a parked order."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from ops import cli
from ops.resolve import ResolveRefused, resolve
from ops.target import Target

REGION = "us-east-1"
AT = "2000-01-01T00:00:00Z"
PREFIX = "python -m ops: error: "
PARKED = ["RECEIVED", "INVENTORY_RESERVED", "PAYMENT_CHARGED", "COMPENSATING", "NEEDS_ATTENTION"]
ORDER = {
    "order_id": "o-1",
    "customer_id": "cust-4711",
    "payment_token": "tok_visa_4242",
    "shipping_address": {
        "name": "Ada Lovelace",
        "line1": "12 Marylebone Road",
        "city": "London",
        "postcode": "NW1 5LR",
    },
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
    return Target({"OrdersTableName": "orders", "StateMachineArn": "arn:aws:states:x"}, region=REGION)


def _seed(target: Target, path: list[str], **extra: Any) -> None:
    from lambda_resilience.aws import to_item

    item = {
        "order_id": "o-1",
        "status": path[-1],
        "payment_attempt": 1,
        "correlation_id": "cid-o-1",
        "order": ORDER,
        "updated_at": AT,
        "history": [{"status": s, "at": AT, "attempt": 1} for s in path],
        **extra,
    }
    target.client("dynamodb").put_item(TableName="orders", Item=to_item(item))


def _item(target: Target) -> dict[str, Any]:
    from lambda_resilience.aws import from_item

    return from_item(target.client("dynamodb").get_item(TableName="orders", Key={"order_id": {"S": "o-1"}})["Item"])


def _cli(target: Target, monkeypatch: pytest.MonkeyPatch, capsys: Any, *argv: str) -> tuple[int, str, str]:
    monkeypatch.setattr("ops.target.Target.from_stack", classmethod(lambda cls, *a, **k: target))
    code = cli.main(["resolve", *argv, "--region", REGION])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("outcome", ["completed", "compensated"])
def test_resolve_parked_order_records_the_outcome_who_when_why(target: Target, monkeypatch, capsys, outcome) -> None:
    _seed(target, PARKED)
    reason = "refunded by hand in the processor dashboard, ticket OPS-17"

    code, out, err = _cli(target, monkeypatch, capsys, "o-1", "--outcome", outcome, "--reason", reason)

    assert code == 0, err
    assert json.loads(out)["status"] == outcome.upper()
    item = _item(target)
    assert item["status"] == outcome.upper()
    entry = item["history"][-1]
    assert {k: entry[k] for k in ("status", "attempt", "action", "reason")} == {
        "status": outcome.upper(),
        "attempt": 1,
        "action": "resolve",
        "reason": reason,
    }
    assert entry["by"].startswith("arn:aws:") and entry["at"] > AT
    # A person vouched for this attempt's outcome: the sweeper does not reconcile it again (no page for it).
    assert 1 in item["reconciled_attempts"]


@pytest.mark.parametrize("status", ["RECEIVED", "PAYMENT_CHARGED", "COMPENSATING", "COMPLETED", "COMPENSATED"])
def test_resolve_refuses_an_order_that_is_not_parked(target: Target, monkeypatch, capsys, status) -> None:
    _seed(target, [*PARKED[:-1], status] if status != "RECEIVED" else ["RECEIVED"])

    code, out, err = _cli(target, monkeypatch, capsys, "o-1", "--outcome", "compensated", "--reason", "done by hand")

    assert (code, out) == (2, "")
    assert err.startswith(f"{PREFIX}refusing to resolve order o-1: it is {status}") and len(err.splitlines()) == 1
    assert _item(target)["status"] == status


@pytest.mark.parametrize(
    ("reason", "why"),
    [
        ("", "a reason is required"),
        ("   ", "a reason is required"),
        ("x" * 501, "at most 500 characters"),
        ("refunded Ada Lovelace by hand", "customer data"),
        ("parcel stays at 12 Marylebone Road", "customer data"),
        ("card 4242 4242 4242 4242 refunded", "customer data"),
        ("mailed ada@example.com", "customer data"),
        ("token tok_visa_4242 voided", "customer data"),
    ],
)
def test_resolve_refuses_a_reason_that_is_empty_long_or_customer_data(target: Target, reason: str, why: str) -> None:
    _seed(target, PARKED)

    with pytest.raises(ResolveRefused, match=why):
        resolve(target, "o-1", "compensated", reason)

    assert _item(target)["status"] == "NEEDS_ATTENTION"


def test_resolve_refused_while_another_holder_has_the_order(target: Target) -> None:
    _seed(target, PARKED, lease={"holder": "sweeper", "until": "2999-01-01T00:00:00Z"})

    with pytest.raises(ResolveRefused, match="sweeper is handling it"):
        resolve(target, "o-1", "compensated", "refunded by hand")

    assert _item(target)["status"] == "NEEDS_ATTENTION"


def test_resolve_replaces_the_lease_of_a_repair_whose_execution_parked_it_again(target: Target) -> None:
    """The repair's execution parked the order again (a parcel the carrier will not recall): its lease is
    live for the saga's timeout, its execution is over; a person settles the order by hand."""
    sfn = boto3.client("stepfunctions", region_name=REGION)
    definition = {"StartAt": "Noop", "States": {"Noop": {"Type": "Pass", "End": True}}}
    machine = sfn.create_state_machine(
        name="saga", definition=json.dumps(definition), roleArn="arn:aws:iam::123456789012:role/x"
    )["stateMachineArn"]
    target = Target({**target.outputs, "StateMachineArn": machine}, region=REGION)
    name = "order-o-1-attempt-1-repair-0"
    running = sfn.start_execution(stateMachineArn=machine, name=name)["executionArn"]
    _seed(target, PARKED, lease={"holder": f"ops-repair:{name}", "until": "2999-01-01T00:00:00Z"})

    with pytest.raises(ResolveRefused, match=f"ops-repair:{name} is handling it"):
        resolve(target, "o-1", "completed", "customer keeps the parcel, ticket OPS-2")
    sfn.stop_execution(executionArn=running)
    resolve(target, "o-1", "completed", "customer keeps the parcel, ticket OPS-2")

    item = _item(target)
    assert item["status"] == "COMPLETED" and "lease" not in item


def test_resolve_refuses_an_unknown_order_and_an_unknown_outcome(target: Target, monkeypatch, capsys) -> None:
    with pytest.raises(ResolveRefused, match="not in the orders table"):
        resolve(target, "nobody", "compensated", "refunded by hand")
    with pytest.raises(SystemExit) as exited:  # argparse's own refusal: one line, exit status 2
        _cli(target, monkeypatch, capsys, "o-1", "--outcome", "refunded", "--reason", "x")
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "--outcome" in err and len(err.splitlines()) == 1
