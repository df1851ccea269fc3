"""``ops dlq discard``: the on-call's exit for a message that will never succeed (issue 41, open item (a)).

A permanent message left in a DLQ holds its depth alarm, and so the OrdersAtRisk composite, in ALARM: the next
order-path incident notifies nobody (decision 0030). Discarding archives the message (body and attributes, who,
why, when) in the failures table, then deletes it: never lost, and the DLQ's depth goes back to 0.
SQS, CloudFormation, DynamoDB and STS on moto."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import boto3
import pytest
from moto import mock_aws

STACK = "OrderPipeline-dev"
#: The ``ops_on_moto`` fixture (tests/ops/conftest.py): ``python -m ops <argv>``, its exit status.
OpsCli = Callable[[list[str]], int]


@pytest.fixture
def stack() -> Iterator[dict[str, str]]:
    """The stack's queues and failures table, and a stack whose outputs name them."""
    with mock_aws():
        sqs = boto3.client("sqs")
        outputs = {
            "OrdersQueueUrl": sqs.create_queue(QueueName="orders")["QueueUrl"],
            "OrdersDlqUrl": sqs.create_queue(QueueName="orders-dlq")["QueueUrl"],
            "NeedsAttentionQueueUrl": sqs.create_queue(QueueName="attention")["QueueUrl"],
            "NeedsAttentionDlqUrl": sqs.create_queue(QueueName="attention-dlq")["QueueUrl"],
            "FailuresTableName": "failures",
        }
        boto3.client("dynamodb").create_table(
            TableName="failures",
            KeySchema=[{"AttributeName": "message_id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "message_id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        template = {
            "Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "placeholder"}}},
            "Outputs": {name: {"Value": value} for name, value in outputs.items()},
        }
        boto3.client("cloudformation").create_stack(StackName=STACK, TemplateBody=json.dumps(template))
        yield outputs


def _dead_letter(url: str, body: str, category: str) -> str:
    attributes = {
        "correlation_id": {"DataType": "String", "StringValue": f"cid-{body}"},
        "dlq_category": {"DataType": "String", "StringValue": category},
    }
    sent = boto3.client("sqs").send_message(QueueUrl=url, MessageBody=body, MessageAttributes=attributes)
    return str(sent["MessageId"])


def _depth(url: str) -> int:
    attributes = boto3.client("sqs").get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
    return int(attributes["Attributes"]["ApproximateNumberOfMessages"])


def test_dlq_discard_archives_then_deletes_a_permanent_message(
    stack: dict[str, str], ops_on_moto: OpsCli, capsys: pytest.CaptureFixture[str]
) -> None:
    body = '{"order_id": "order-1", "payment_attempt": 1}'
    poison = _dead_letter(stack["OrdersDlqUrl"], body, "permanent")
    kept = _dead_letter(stack["OrdersDlqUrl"], "other", "permanent")
    code = ops_on_moto(
        ["dlq", "discard", "--queue", "orders", "--message-id", poison, "--reason", "poison, ticket OPS-1"]
    )
    assert code == 0, capsys.readouterr().err
    printed = json.loads(capsys.readouterr().out)
    assert printed["message_id"] == poison and printed["order_id"] == "order-1"
    assert printed["archived_in"] == {"table": "failures", "message_id": f"discarded#{poison}"}
    assert body not in json.dumps(printed)  # the body is archived, never printed
    assert _depth(stack["OrdersDlqUrl"]) == 1  # the other message stays, visible again
    item = boto3.client("dynamodb").get_item(TableName="failures", Key={"message_id": {"S": f"discarded#{poison}"}})
    archived = item["Item"]
    assert archived["body"]["S"] == body
    assert json.loads(archived["attributes"]["S"])["dlq_category"]["StringValue"] == "permanent"
    assert archived["reason"]["S"] == "poison, ticket OPS-1"
    assert archived["discarded_by"]["S"].startswith("arn:aws:")  # who: the caller's identity (STS)
    assert archived["queue"]["S"] == "orders" and int(archived["expires_at"]["N"]) > 0
    assert kept != poison


def test_dlq_discard_refuses_a_transient_message_without_force(
    stack: dict[str, str], ops_on_moto: OpsCli, capsys: pytest.CaptureFixture[str]
) -> None:
    """A transient failure succeeds when replayed: discarding it would lose a sale; --force says you mean it."""
    slow = _dead_letter(stack["OrdersDlqUrl"], "slow", "transient")
    assert ops_on_moto(["dlq", "discard", "--queue", "orders", "--message-id", slow, "--reason", "x"]) == 2
    assert "replay" in capsys.readouterr().err
    assert _depth(stack["OrdersDlqUrl"]) == 1
    assert ops_on_moto(["dlq", "discard", "--queue", "orders", "--message-id", slow, "--reason", "x", "--force"]) == 0
    assert _depth(stack["OrdersDlqUrl"]) == 0


def test_dlq_discard_without_a_reason_or_an_unknown_message_changes_nothing(
    stack: dict[str, str], ops_on_moto: OpsCli, capsys: pytest.CaptureFixture[str]
) -> None:
    poison = _dead_letter(stack["OrdersDlqUrl"], "poison", "permanent")
    assert ops_on_moto(["dlq", "discard", "--queue", "orders", "--message-id", poison, "--reason", "  "]) == 2
    assert "reason" in capsys.readouterr().err
    missing = ["dlq", "discard", "--queue", "orders", "--message-id", "no-such-id", "--reason", "x"]
    assert ops_on_moto(missing) == 2
    assert "not found" in capsys.readouterr().err
    assert _depth(stack["OrdersDlqUrl"]) == 1
    scan = boto3.client("dynamodb").scan(TableName="failures")
    assert scan["Items"] == []
