"""``ops dlq list`` / ``ops dlq replay`` with the three failure categories (SQS and CloudFormation on moto)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import boto3
import pytest
from moto import mock_aws

from ops.cli import build_parser, main
from ops.dlq import format_list

STACK = "OrderPipeline-dev"
#: The ``ops_on_moto`` fixture (tests/ops/conftest.py): ``python -m ops <argv>``, its exit status.
OpsCli = Callable[[list[str]], int]


@pytest.fixture
def queues() -> Iterator[dict[str, str]]:
    """The stack's four queues, and a stack whose outputs name them."""
    with mock_aws():
        sqs = boto3.client("sqs")
        urls = {
            "OrdersQueueUrl": sqs.create_queue(QueueName="orders")["QueueUrl"],
            "OrdersDlqUrl": sqs.create_queue(QueueName="orders-dlq")["QueueUrl"],
            "NeedsAttentionQueueUrl": sqs.create_queue(QueueName="attention")["QueueUrl"],
            "NeedsAttentionDlqUrl": sqs.create_queue(QueueName="attention-dlq")["QueueUrl"],
        }
        template = {
            "Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "placeholder"}}},
            "Outputs": {name: {"Value": url} for name, url in urls.items()},
        }
        boto3.client("cloudformation").create_stack(StackName=STACK, TemplateBody=json.dumps(template))
        yield urls


def dead_letter(url: str, body: str, category: str | None) -> str:
    attributes = {"correlation_id": {"DataType": "String", "StringValue": f"cid-{body}"}}
    if category:
        attributes["dlq_category"] = {"DataType": "String", "StringValue": category}
        attributes["dlq_receive_count"] = {"DataType": "String", "StringValue": "1"}
    return str(
        boto3.client("sqs").send_message(QueueUrl=url, MessageBody=body, MessageAttributes=attributes)["MessageId"]
    )


def bodies(url: str) -> list[str]:
    messages = boto3.client("sqs").receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0)
    return sorted(m["Body"] for m in messages.get("Messages", []))


def test_dlq_list_shows_every_category(
    queues: dict[str, str], ops_on_moto: OpsCli, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first list as the on-call types it (the CLI's default long poll), the second on moto's one server."""
    for body, category in (("a", "unknown"), ("b", "unknown"), ("c", "permanent"), ("d", "transient")):
        dead_letter(queues["OrdersDlqUrl"], body, category)
    assert main(["dlq", "list", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert {c: e["count"] for c, e in summary["orders"].items()} == {"unknown": 2, "permanent": 1, "transient": 1}
    assert ops_on_moto(["dlq", "list"]) == 0
    rows = [line.split()[:3] for line in capsys.readouterr().out.splitlines()[1:]]
    assert rows == [
        ["orders", "transient", "1"],
        ["orders", "permanent", "1"],
        ["orders", "unknown", "2"],
        ["orders", "unclassified", "0"],
        ["needs-attention", "transient", "0"],
        ["needs-attention", "permanent", "0"],
        ["needs-attention", "unknown", "0"],
        ["needs-attention", "unclassified", "0"],
    ]


def test_dlq_list_format_keeps_categories_it_does_not_know() -> None:
    text = format_list({"orders": {"mystery": {"count": 3, "oldest_age_seconds": 5}}})
    assert text.splitlines()[-1].split() == ["orders", "mystery", "3", "5", "s"]


def test_dlq_replay_unknown_category_without_force(
    queues: dict[str, str], ops_on_moto: OpsCli, capsys: pytest.CaptureFixture[str]
) -> None:
    unknown = dead_letter(queues["OrdersDlqUrl"], "bug", "unknown")
    dead_letter(queues["OrdersDlqUrl"], "poison", "permanent")
    dead_letter(queues["OrdersDlqUrl"], "slow", "transient")
    assert ops_on_moto(["dlq", "replay", "--queue", "orders", "--category", "unknown"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["replayed"] == [unknown]
    assert bodies(queues["OrdersQueueUrl"]) == ["bug"]
    assert bodies(queues["OrdersDlqUrl"]) == ["poison", "slow"]


def test_dlq_replay_permanent_needs_force(
    queues: dict[str, str], ops_on_moto: OpsCli, capsys: pytest.CaptureFixture[str]
) -> None:
    poison = dead_letter(queues["OrdersDlqUrl"], "poison", "permanent")
    assert ops_on_moto(["dlq", "replay", "--queue", "orders", "--category", "permanent"]) == 2
    assert "--force" in capsys.readouterr().err
    assert bodies(queues["OrdersQueueUrl"]) == []
    assert ops_on_moto(["dlq", "replay", "--queue", "orders", "--category", "permanent", "--force"]) == 0
    assert json.loads(capsys.readouterr().out)["replayed"] == [poison]
    assert bodies(queues["OrdersQueueUrl"]) == ["poison"]


def test_dlq_replay_unclassified_and_all(
    queues: dict[str, str], ops_on_moto: OpsCli, capsys: pytest.CaptureFixture[str]
) -> None:
    redriven = dead_letter(queues["OrdersDlqUrl"], "redriven", None)  # no category, no failure record
    dead_letter(queues["OrdersDlqUrl"], "poison", "permanent")
    assert ops_on_moto(["dlq", "replay", "--queue", "orders", "--category", "all", "--dry-run"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["would_replay"] == [redriven]
    assert list(report["skipped"].values()) == ["permanent (use --force)"]
    assert ops_on_moto(["dlq", "replay", "--queue", "orders", "--category", "unclassified"]) == 0
    assert json.loads(capsys.readouterr().out)["replayed"] == [redriven]


def test_dlq_replay_help_lists_every_category(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["dlq", "replay", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "{transient,permanent,unknown,unclassified,all}" in text
    assert "transient (default)" in text and "permanent (needs --force)" in text and "unknown (" in text


def test_dlq_replay_keeps_every_attribute_shape_sqs_allows(queues: dict[str, str], ops_on_moto: OpsCli) -> None:
    """Issue 28: a message redriven by SQS with 10 attributes (SQS's maximum), one of them binary and
    one a Number, is replayed as it was: no attribute added beyond 10, binary kept as bytes."""
    attributes: dict[str, dict[str, object]] = {
        "correlation_id": {"DataType": "String", "StringValue": "cid-full"},
        "blob": {"DataType": "Binary", "BinaryValue": b"\x00\x01binary"},
        "count": {"DataType": "Number", "StringValue": "42"},
    }
    for i in range(7):
        attributes[f"extra_{i}"] = {"DataType": "String.custom", "StringValue": f"v{i}"}
    sqs = boto3.client("sqs")
    sqs.send_message(QueueUrl=queues["OrdersDlqUrl"], MessageBody="full", MessageAttributes=attributes)

    assert ops_on_moto(["dlq", "replay", "--queue", "orders", "--category", "unclassified"]) == 0

    (message,) = sqs.receive_message(
        QueueUrl=queues["OrdersQueueUrl"], MessageAttributeNames=["All"], MaxNumberOfMessages=10
    )["Messages"]
    got = message["MessageAttributes"]
    assert message["Body"] == "full" and len(got) == 10
    assert got["blob"]["BinaryValue"] == b"\x00\x01binary" and got["blob"]["DataType"] == "Binary"
    assert got["count"] == {"DataType": "Number", "StringValue": "42"}
    assert got["correlation_id"]["StringValue"] == "cid-full"
    assert bodies(queues["OrdersDlqUrl"]) == []


def test_dlq_replay_adds_replay_count_when_there_is_room(queues: dict[str, str], ops_on_moto: OpsCli) -> None:
    sqs = boto3.client("sqs")
    blob = {"DataType": "Binary", "BinaryValue": b"\xff"}
    sqs.send_message(QueueUrl=queues["OrdersDlqUrl"], MessageBody="small", MessageAttributes={"blob": blob})

    assert ops_on_moto(["dlq", "replay", "--queue", "orders", "--category", "unclassified"]) == 0

    (message,) = sqs.receive_message(QueueUrl=queues["OrdersQueueUrl"], MessageAttributeNames=["All"])["Messages"]
    assert message["MessageAttributes"]["blob"]["BinaryValue"] == b"\xff"
    assert message["MessageAttributes"]["replay_count"]["StringValue"] == "1"


def test_dlq_replay_dry_run_details_each_message(
    queues: dict[str, str], ops_on_moto: OpsCli, capsys: pytest.CaptureFixture[str]
) -> None:
    sqs = boto3.client("sqs")
    attributes = {
        "correlation_id": {"DataType": "String", "StringValue": "cid-9"},
        "dlq_category": {"DataType": "String", "StringValue": "transient"},
    }
    body = json.dumps({"order_id": "order-9", "payment_attempt": 3, "payment": {"token": "tok_secret"}})
    sqs.send_message(QueueUrl=queues["OrdersDlqUrl"], MessageBody=body, MessageAttributes=attributes)
    assert ops_on_moto(["dlq", "replay", "--queue", "orders", "--dry-run"]) == 0
    out = capsys.readouterr().out
    (detail,) = json.loads(out)["would_replay_details"]
    assert (detail["order_id"], detail["attempt"], detail["correlation_id"], detail["category"]) == (
        "order-9",
        3,
        "cid-9",
        "transient",
    )
    assert "tok_secret" not in out
    assert bodies(queues["OrdersDlqUrl"]) == [body]  # the look released it


def test_dlq_history_without_a_failures_table_is_one_line(
    queues: dict[str, str], ops_on_moto: OpsCli, capsys: pytest.CaptureFixture[str]
) -> None:
    assert ops_on_moto(["dlq", "history", "--hours", "2"]) == 2
    assert "no FailuresTableName output" in capsys.readouterr().err
