"""``ops smoke`` against a stack on moto whose pipeline is a fake driven by the smoke's poll hook.

The fake processes the orders queue the way the pipeline's contract says (decline token ->
COMPENSATED, country ZZ -> COMPENSATED, a malformed body -> orders DLQ as permanent, a repeated
attempt -> nothing new) and can be told to misbehave, so each check is shown to fail when it should.
The real pipeline is smoke-tested in tests/ops/test_smoke_local.py (``ops local up``) and by
``make rehearse`` (MiniStack).
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from moto import mock_aws

import order_domain.env as env_names
from ops.cli import main
from ops.smoke import SMOKE_SKU, SmokeOptions, SmokeReport, SmokeUsageError, context_defaults, format_table, run_smoke
from ops.target import Target
from order_domain.ports import Charge

STACK = "OrderPipeline-dev"
ONCALL = "oncall@example.com"
REGION = "us-east-1"
ALARM = "OrdersDlqAlarm"


@dataclass
class FakePipeline:
    """Does what the pipeline would, one batch per smoke poll; ``charges`` is the provider's record."""

    outputs: dict[str, str]
    double_charge: bool = False
    dead_letter: bool = True
    raise_alarm: bool = False
    flap_alarm: bool = False  # to ALARM once, back to OK at the next step
    stall: bool = False  # every order charged and left in flight (PAYMENT_CHARGED)
    #: As CloudWatch would: notify the alarm topic when the DLQ holds a message, and on a forced ALARM.
    cloudwatch_pages: bool = False
    charges: dict[str, str] = field(default_factory=dict)
    paged: set[str] = field(default_factory=set)

    def client(self, service: str) -> Any:
        return boto3.client(service, region_name=REGION)

    def step(self, _seconds: float) -> None:
        sqs, dynamodb = self.client("sqs"), self.client("dynamodb")
        messages = sqs.receive_message(
            QueueUrl=self.outputs["OrdersQueueUrl"], MaxNumberOfMessages=10, MessageAttributeNames=["All"]
        ).get("Messages", [])
        for message in messages:
            self._process(message, sqs, dynamodb)
            sqs.delete_message(QueueUrl=self.outputs["OrdersQueueUrl"], ReceiptHandle=message["ReceiptHandle"])
        cloudwatch = self.client("cloudwatch")
        if self.cloudwatch_pages:
            self._page(sqs, cloudwatch)
        if self.raise_alarm:
            cloudwatch.set_alarm_state(AlarmName=ALARM, StateValue="ALARM", StateReason="test")
        elif self.flap_alarm:
            state = cloudwatch.describe_alarms(AlarmNames=[ALARM])["MetricAlarms"][0]["StateValue"]
            if state == "ALARM":
                cloudwatch.set_alarm_state(AlarmName=ALARM, StateValue="OK", StateReason="test")
                self.flap_alarm = False
            else:
                cloudwatch.set_alarm_state(AlarmName=ALARM, StateValue="ALARM", StateReason="test")

    def _page(self, sqs: Any, cloudwatch: Any) -> None:
        depth = sqs.get_queue_attributes(QueueUrl=self.outputs["OrdersDlqUrl"], AttributeNames=["All"])["Attributes"]
        forced = cloudwatch.describe_alarms(AlarmNames=[ALARM])["MetricAlarms"][0]
        reasons = []
        if int(depth["ApproximateNumberOfMessages"]) and "dlq" not in self.paged:
            reasons.append("dlq")
        if (
            forced["StateValue"] == "ALARM"
            and forced["StateReason"].startswith("ops smoke")
            and "forced" not in self.paged
        ):
            reasons.append("forced")
        for reason in reasons:
            self.paged.add(reason)
            message = json.dumps({"AlarmName": ALARM, "NewStateValue": "ALARM", "OldStateValue": "OK"})
            self.client("sns").publish(TopicArn=self.outputs["AlarmTopicArn"], Message=message)

    def _process(self, message: dict[str, Any], sqs: Any, dynamodb: Any) -> None:
        body = json.loads(message["Body"])
        if not isinstance(body.get("items"), list):
            if self.dead_letter:
                attributes = {
                    **message["MessageAttributes"],
                    "dlq_category": {"DataType": "String", "StringValue": "permanent"},
                }
                sqs.send_message(
                    QueueUrl=self.outputs["OrdersDlqUrl"], MessageBody=message["Body"], MessageAttributes=attributes
                )
            return
        order_id, attempt = body["order_id"], body["payment_attempt"]
        stored = dynamodb.get_item(TableName=self.outputs["OrdersTableName"], Key={"order_id": {"S": order_id}})
        if int(stored.get("Item", {}).get("payment_attempt", {}).get("N", 0)) >= attempt:
            return  # a duplicate: nothing new
        key = f"{order_id}#charge-payment#attempt-{attempt}"
        if body["payment_token"].startswith("tok_decline"):
            self.charges[key], status = "declined", "COMPENSATED"
        else:
            self.charges[key] = "captured"
            if self.double_charge:
                self.charges[f"{order_id}#charge-payment#attempt-{attempt + 1}"] = "captured"
            status = "COMPENSATED" if body["shipping_address"]["country"] == "ZZ" else "COMPLETED"
        if self.stall:
            status = "PAYMENT_CHARGED"
        if status == "COMPLETED":
            dynamodb.update_item(
                TableName=self.outputs["InventoryTableName"],
                Key={"pk": {"S": f"sku#{SMOKE_SKU}"}},
                UpdateExpression="SET available = available - :q",
                ExpressionAttributeValues={":q": {"N": "1"}},
            )
        item = {"order_id": {"S": order_id}, "status": {"S": status}, "payment_attempt": {"N": str(attempt)}}
        dynamodb.put_item(TableName=self.outputs["OrdersTableName"], Item=item)


class FakePort:
    """The payment port's lookup, answered from the fake pipeline's charges."""

    def __init__(self, pipeline: FakePipeline) -> None:
        self.pipeline = pipeline

    def find_charge(self, key: str) -> Charge | None:
        status = self.pipeline.charges.get(key)
        return None if status is None else Charge(status=status)


def _zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("index.py", "def handler(event, context):\n    return {}\n")
    return buffer.getvalue()


@pytest.fixture
def stack(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """Tables, queues, an alarm on the DLQ, the charge function (its environment) and the stack's outputs."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        dynamodb, sqs = boto3.client("dynamodb"), boto3.client("sqs")
        outputs: dict[str, str] = {}
        for output, key in (
            ("OrdersTableName", "order_id"),
            ("InventoryTableName", "pk"),
            ("FailuresTableName", "message_id"),
        ):
            name = output.removesuffix("TableName").lower()
            dynamodb.create_table(
                TableName=name,
                KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
                AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
                BillingMode="PAY_PER_REQUEST",
            )
            outputs[output] = name
        outputs["OrdersQueueUrl"] = sqs.create_queue(QueueName="orders")["QueueUrl"]
        outputs["OrdersDlqUrl"] = sqs.create_queue(QueueName="orders-dlq")["QueueUrl"]
        outputs["AlarmTopicArn"] = boto3.client("sns").create_topic(Name="alarms")["TopicArn"]
        # The on-call's confirmed e-mail (moto confirms it at once): the page path reaches a person.
        boto3.client("sns").subscribe(TopicArn=outputs["AlarmTopicArn"], Protocol="email", Endpoint=ONCALL)
        outputs["LedgerTableName"] = "ledger"
        boto3.client("cloudwatch").put_metric_alarm(
            AlarmName=ALARM,
            Namespace="AWS/SQS",
            MetricName="ApproximateNumberOfMessagesVisible",
            Statistic="Maximum",
            Period=60,
            EvaluationPeriods=1,
            Threshold=0,
            ComparisonOperator="GreaterThanThreshold",
            AlarmActions=[outputs["AlarmTopicArn"]],
        )
        role = boto3.client("iam").create_role(RoleName="charge", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        boto3.client("lambda").create_function(
            FunctionName="charge",
            Runtime="python3.13",
            Role=role,
            Handler="index.handler",
            Code={"ZipFile": _zip()},
            Environment={
                "Variables": {env_names.ORDERS_TABLE_NAME: "orders", env_names.PAYMENT_PROVIDER_FUNCTION: "sandbox"}
            },
        )
        template = {
            "Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "placeholder"}}},
            "Outputs": {name: {"Value": value} for name, value in outputs.items()},
        }
        boto3.client("cloudformation").create_stack(StackName=STACK, TemplateBody=json.dumps(template))
        yield outputs


def _smoke(monkeypatch: pytest.MonkeyPatch, pipeline: FakePipeline, **options: Any) -> SmokeReport:
    monkeypatch.setattr("ops.smoke.payment_port", lambda target, env: FakePort(pipeline))
    # moto is one server: its DLQ reads short-poll (a long poll there only waits; real SQS: tests/ops/test_target.py).
    target = Target.from_stack(STACK, region=REGION, sqs_wait_seconds=0)
    # The page path needs CloudWatch's alarm actions: tests/ops/test_smoke_local.py checks it against `ops local up`.
    defaults: dict[str, Any] = {
        "timeout_seconds": 5.0,
        "alarm_wait_seconds": 0.0,
        "sleep": pipeline.step,
        "page_path": False,
    }
    return run_smoke(target, SmokeOptions(**{**defaults, **options}))


def _failed(report: SmokeReport) -> dict[str, str]:
    return {c.name: c.observed for c in report.checks if not c.ok}


def test_smoke_passes_on_a_working_pipeline_and_removes_what_it_created(
    stack: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    report = _smoke(monkeypatch, FakePipeline(stack), dead_letter=True)
    assert report.passed, format_table(report)
    names = {c.name for c in report.checks}
    assert {
        "declined: attempt 1",
        "malformed: orders DLQ category",
        "duplicate charges",
        "smoke SKU stock taken",
    } <= names
    dynamodb = boto3.client("dynamodb")
    assert dynamodb.scan(TableName="orders")["Items"] == []
    assert dynamodb.scan(TableName="inventory")["Items"] == []  # the SKU it seeded
    dlq = boto3.client("sqs").receive_message(QueueUrl=stack["OrdersDlqUrl"], VisibilityTimeout=0)
    assert dlq.get("Messages", []) == []
    assert "passed (13/13 checks)" in format_table(report)


def test_smoke_keeps_a_stocked_sku_and_others_dead_letters(
    stack: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    dynamodb = boto3.client("dynamodb")
    dynamodb.put_item(TableName="inventory", Item={"pk": {"S": f"sku#{SMOKE_SKU}"}, "available": {"N": "50"}})
    other = {"correlation_id": {"DataType": "String", "StringValue": "a customer's order"}}
    boto3.client("sqs").send_message(QueueUrl=stack["OrdersDlqUrl"], MessageBody="{}", MessageAttributes=other)
    report = _smoke(monkeypatch, FakePipeline(stack))
    assert report.passed, format_table(report)
    stock = dynamodb.get_item(TableName="inventory", Key={"pk": {"S": f"sku#{SMOKE_SKU}"}})["Item"]
    assert stock["available"] == {"N": "47"}  # checked, not reseeded, not removed: 3 orders completed
    left = boto3.client("sqs").receive_message(QueueUrl=stack["OrdersDlqUrl"], MessageAttributeNames=["All"])
    assert [m["MessageAttributes"]["correlation_id"]["StringValue"] for m in left["Messages"]] == ["a customer's order"]


def test_smoke_fails_on_a_duplicate_charge(stack: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    report = _smoke(monkeypatch, FakePipeline(stack, double_charge=True))
    failed = _failed(report)
    assert failed["duplicate charges"] == "good, declined, duplicate, undeliverable"
    assert failed["good: charges by attempt"] == "captured, captured"


def test_smoke_fails_when_the_malformed_order_is_not_dead_lettered(
    stack: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    report = _smoke(monkeypatch, FakePipeline(stack, dead_letter=False), dead_letter=True)
    assert _failed(report) == {"malformed: orders DLQ category": "not found"}


def test_smoke_without_the_api_sends_no_malformed_order_to_the_queue(
    stack: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 27: the smoke's malformed order dead-lettered paged through the DLQ alarm. Without the order API
    to refuse it at the edge it is not sent (unless --dead-letter), and the report says so."""
    report = _smoke(monkeypatch, FakePipeline(stack))
    assert report.passed, format_table(report)
    assert "malformed: orders DLQ category" not in {c.name for c in report.checks}
    assert any(note.startswith("malformed case skipped") for note in report.notes)
    assert "passed (12/12 checks)" in format_table(report)


def test_smoke_fails_on_a_page_its_own_orders_caused(stack: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The alarm topic's subscription is held for the whole smoke: a page before the forced one is the smoke's."""
    report = _smoke(monkeypatch, FakePipeline(stack, cloudwatch_pages=True), dead_letter=True, page_path=True)
    assert _failed(report) == {"pages by the smoke's own orders": ALARM}
    assert {c.name: c.observed for c in report.checks}["page path: forced alarm reaches the topic's subscribers"] == (
        "page delivered"
    )


def test_smoke_pages_nobody_and_hears_the_forced_page(stack: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    report = _smoke(monkeypatch, FakePipeline(stack, cloudwatch_pages=True), page_path=True)
    assert report.passed, format_table(report)
    assert {"pages by the smoke's own orders", "page path: forced alarm reaches the topic's subscribers"} <= {
        c.name for c in report.checks
    }
    left = boto3.client("sns").list_subscriptions()["Subscriptions"]
    assert [s["Endpoint"] for s in left] == [ONCALL]  # the temporary subscription removed


def test_smoke_fails_on_an_alarm_it_left_in_alarm(stack: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    report = _smoke(monkeypatch, FakePipeline(stack, raise_alarm=True))
    assert _failed(report) == {"alarms left in ALARM by the smoke": ALARM}


def test_smoke_waits_for_an_alarm_to_clear_and_notes_it(stack: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    report = _smoke(monkeypatch, FakePipeline(stack, flap_alarm=True), alarm_wait_seconds=30.0)
    assert report.passed, format_table(report)


class _Pages:
    def __init__(self, pages: list[dict[str, Any]]) -> None:
        self.pages = pages

    def paginate(self, **_kwargs: Any) -> list[dict[str, Any]]:
        return self.pages


class _AlarmHistory:
    """CloudWatch's DescribeAlarmHistory and DescribeAlarms (moto implements no alarm history)."""

    def get_paginator(self, name: str) -> _Pages:
        if name == "describe_alarm_history":
            summaries = [("ours", "Alarm updated from OK to ALARM"), ("ours", "Alarm updated from ALARM to OK")]
            summaries += [
                ("other-stack", "Alarm updated from OK to ALARM"),
                ("quiet", "Alarm updated from ALARM to OK"),
            ]
            items = [{"AlarmName": n, "HistorySummary": h} for n, h in summaries]
            return _Pages([{"AlarmHistoryItems": items}])
        alarms = [{"AlarmName": n, "AlarmActions": ["topic"]} for n in ("ours", "quiet")]
        alarms.append({"AlarmName": "ticket", "AlarmActions": ["ticket-topic"]})
        return _Pages([{"MetricAlarms": [*alarms, {"AlarmName": "other-stack", "AlarmActions": ["elsewhere"]}]}])


def test_smoke_alarms_raised_since_reads_the_stack_alarms_history() -> None:
    from datetime import UTC, datetime

    from ops.smoke import Smoke

    target = Target({"AlarmTopicArn": "topic"}, _clients={"cloudwatch": _AlarmHistory()})
    assert Smoke(target, SmokeOptions()).alarms_raised_since(datetime.now(UTC)) == {"ours"}


def test_smoke_alarms_raised_since_counts_the_ticket_topics_alarms() -> None:
    """Alarms of severity ticket notify the stack's second topic (TicketTopicArn): still the stack's own."""
    from datetime import UTC, datetime

    from ops.smoke import Smoke

    class _History(_AlarmHistory):
        def get_paginator(self, name: str) -> _Pages:
            if name == "describe_alarm_history":
                return _Pages([{"AlarmHistoryItems": [{"AlarmName": "ticket", "HistorySummary": "from OK to ALARM"}]}])
            return super().get_paginator(name)

    outputs = {"AlarmTopicArn": "topic", "TicketTopicArn": "ticket-topic"}
    target = Target(outputs, _clients={"cloudwatch": _History()})
    assert Smoke(target, SmokeOptions()).alarms_raised_since(datetime.now(UTC)) == {"ticket"}


def test_smoke_fails_by_its_deadline_when_nothing_processes_orders(
    stack: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = FakePipeline(stack)
    monkeypatch.setattr("ops.smoke.payment_port", lambda target, env: FakePort(pipeline))
    target = Target.from_stack(STACK, region=REGION, sqs_wait_seconds=0)
    options = SmokeOptions(timeout_seconds=0.2, alarm_wait_seconds=0.0, sleep=lambda s: None, page_path=False)
    report = run_smoke(target, options)
    failed = _failed(report)
    assert failed["good: final status"] == "missing (attempt -)"
    assert {name for name in failed if name.endswith("final status")} == {
        "good: final status",
        "declined: final status",
        "duplicate: final status",
        "undeliverable: final status",
    }
    assert boto3.client("dynamodb").scan(TableName="inventory")["Items"] == []  # cleaned up all the same


def test_smoke_never_deletes_an_order_still_in_flight(stack: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 28: at the deadline (or on Ctrl-C) the smoke's orders may still be charged and running; their
    rows (and reservations) stay, so the saga or the sweeper finishes them and refunds what moved."""
    report = _smoke(monkeypatch, FakePipeline(stack, stall=True), timeout_seconds=3.0)

    assert not report.passed
    left = boto3.client("dynamodb").scan(TableName="orders")["Items"]
    assert sorted(i["status"]["S"] for i in left) == ["PAYMENT_CHARGED"] * 4
    assert any("in flight" in note for note in report.notes)


def test_smoke_cli_exit_status_and_table(
    stack: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = FakePipeline(stack)
    monkeypatch.setattr("ops.smoke.payment_port", lambda target, env: FakePort(pipeline))
    monkeypatch.setattr("time.sleep", pipeline.step)
    argv = ["smoke", "--region", REGION, "--timeout", "5", "--alarm-wait", "0", "--no-page-path", "--dead-letter"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "duplicate charges" in out and "passed (13/13 checks)" in out
    pipeline.dead_letter = False  # the smoke then polls the DLQ to its deadline: short polls on moto's one server
    assert main([*argv, "--json"], target=Target.from_stack(STACK, region=REGION, sqs_wait_seconds=0)) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] is False
    assert [c["check"] for c in report["checks"] if not c["ok"]] == ["malformed: orders DLQ category"]


def test_smoke_real_provider_needs_test_tokens(
    stack: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    boto3.client("lambda").update_function_configuration(
        FunctionName="charge",
        Environment={
            "Variables": {env_names.ORDERS_TABLE_NAME: "orders", env_names.PAYMENT_API_URL: "https://api.example.com"}
        },
    )
    template = {
        "Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "placeholder"}}},
        "Outputs": {k: {"Value": v} for k, v in stack.items() if k != "LedgerTableName"},
    }
    boto3.client("cloudformation").create_stack(StackName="OrderPipeline-prod", TemplateBody=json.dumps(template))
    assert main(["smoke", "--stack", "OrderPipeline-prod", "--region", REGION]) == 2
    assert "--payment-token and --decline-token" in capsys.readouterr().err
    with pytest.raises(SmokeUsageError):
        run_smoke(Target.from_stack("OrderPipeline-prod", region=REGION), SmokeOptions(payment_token="tok_visa"))


def test_smoke_context_defaults_read_cdk_json(tmp_path: Any) -> None:
    cdk_json = tmp_path / "cdk.json"
    cdk_json.write_text(json.dumps({"context": {"smoke_payment_token": "tok_visa", "stage": "dev"}}))
    assert context_defaults(cdk_json) == {"payment_token": "tok_visa"}
    assert context_defaults(tmp_path / "missing.json") == {}
