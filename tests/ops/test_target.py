"""ops targets: resource names from a deployed stack's outputs (CloudFormation on moto)."""

from __future__ import annotations

import json

import boto3
import pytest

from harness.cli import build_parser as workshop_parser
from ops.cli import build_parser
from ops.repair import RepairRefused, repair
from ops.target import Target, TargetError

TEMPLATE = {
    "Resources": {"Dummy": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "dummy"}}},
    "Outputs": {
        "OrdersTableName": {"Value": "orders-table"},
        "StateMachineArn": {"Value": "arn:aws:states:us-east-1:123456789012:stateMachine:saga"},
    },
}


def test_target_from_stack_reads_outputs(aws: None) -> None:
    boto3.client("cloudformation").create_stack(StackName="OrderPipeline-dev", TemplateBody=json.dumps(TEMPLATE))
    target = Target.from_stack("OrderPipeline-dev", region="us-east-1")
    assert target.output("OrdersTableName") == "orders-table"
    assert target.output("StateMachineArn").endswith(":saga")
    with pytest.raises(TargetError, match="NeedsAttentionQueueUrl"):
        target.output("NeedsAttentionQueueUrl")


def test_target_from_stack_missing_stack_is_a_clear_error(aws: None) -> None:
    with pytest.raises(TargetError, match="cannot read stack 'nope'"):
        Target.from_stack("nope", region="us-east-1")


def test_repair_unknown_order_changes_nothing(aws: None) -> None:
    ddb = boto3.client("dynamodb")
    ddb.create_table(
        TableName="orders-table",
        KeySchema=[{"AttributeName": "order_id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "order_id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    target = Target({"OrdersTableName": "orders-table", "StateMachineArn": "arn"}, region="us-east-1")
    with pytest.raises(RepairRefused, match="cannot repair order missing: not in the orders table"):
        repair(target, "missing", "redrive")
    with pytest.raises(ValueError, match="redrive or compensate"):
        repair(target, "missing", "delete")  # type: ignore[arg-type]


def test_cli_repair_arguments() -> None:
    args = build_parser().parse_args(
        [
            "repair",
            "order-1",
            "--action",
            "compensate",
            "--stack",
            "S",
            "--region",
            "eu-west-1",
            "--endpoint-url",
            "http://127.0.0.1:5000",
        ]
    )
    assert (args.order_id, args.action, args.stack, args.region, args.endpoint_url) == (
        "order-1",
        "compensate",
        "S",
        "eu-west-1",
        "http://127.0.0.1:5000",
    )
    with pytest.raises(SystemExit):
        workshop_parser().parse_args(["local", "run", "--decline-rate", "1.5"])


def test_target_client_is_built_once_per_service(aws: None) -> None:
    target = Target({"OrdersTableName": "orders-table"}, region="eu-west-1")
    sqs = target.client("sqs")
    assert target.client("sqs") is sqs
    assert target.client("dynamodb") is not sqs
    assert sqs.meta.region_name == "eu-west-1"


def test_target_clients_of_every_service_come_from_one_session(aws: None) -> None:
    """A new session parses botocore's service data again (about 260 ms of CPU per client, docs/results.md)."""
    from unittest import mock

    target = Target({"OrdersTableName": "orders-table"}, region="eu-west-1")
    with mock.patch.object(boto3.session, "Session", wraps=boto3.session.Session) as sessions:
        target.client("sqs")
        target.client("dynamodb")
        assert target.session() is target.session()
    assert sessions.call_count == 1


def _receive_waits(sqs_wait_seconds: int | None) -> list[int]:
    """``WaitTimeSeconds`` of every ReceiveMessage ``ops dlq list`` makes through a target with that setting."""
    from ops.dlq import list_queues

    session = boto3.session.Session(region_name="us-east-1")
    sqs = session.client("sqs")
    urls = {name: sqs.create_queue(QueueName=name)["QueueUrl"] for name in ("o", "o-dlq", "a", "a-dlq")}
    outputs = {"OrdersQueueUrl": urls["o"], "OrdersDlqUrl": urls["o-dlq"]}
    outputs |= {"NeedsAttentionQueueUrl": urls["a"], "NeedsAttentionDlqUrl": urls["a-dlq"]}
    waits: list[int] = []
    session.events.register(
        "provide-client-params.sqs.ReceiveMessage", lambda params, **_: waits.append(params["WaitTimeSeconds"])
    )
    list_queues(Target(outputs, sqs_wait_seconds=sqs_wait_seconds, _session=session))
    return waits


def test_target_sqs_reads_long_poll_by_default_and_short_poll_a_one_server_queue(aws: None) -> None:
    """Real SQS needs long polls (an empty short poll proves nothing); a one-server emulator (moto, the local
    endpoint) answers a short poll with every message, and a long poll there only waits."""
    assert set(_receive_waits(None)) == {1}
    assert set(_receive_waits(0)) == {0}
    with pytest.raises(ValueError, match=r"sqs_wait_seconds must be within 0\.\.20"):
        Target({}, sqs_wait_seconds=21)


def test_target_sqs_wait_yields_to_the_commands_own_wait(aws: None) -> None:
    target = Target({}, sqs_wait_seconds=0)
    assert target.receive_wait(None) == {"wait_seconds": 0}
    assert target.receive_wait(5) == {"wait_seconds": 5}
    assert Target({}).receive_wait(None) == {}
