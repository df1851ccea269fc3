"""DLQ discipline on the local pipeline: classification, replay by category, trace."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from contextlib import nullcontext
from typing import Any
from unittest import mock

import boto3
import pytest

from harness.run.run import PipelineRun, RunOptions, local_pipeline
from harness.workload.orders import make_order
from local_cloud.faults import throttle_dynamodb
from local_cloud.template import CloudAssembly
from ops.dlq import list_queues, replay_queue
from ops.repair import order_executions
from ops.trace import trace

pytestmark = pytest.mark.e2e


@pytest.fixture
def pipeline(assembly: CloudAssembly) -> Iterator[PipelineRun]:
    with local_pipeline(RunOptions(assembly_dir=assembly.outdir), assembly) as run:
        yield run


def dlq_messages(run: PipelineRun, queue: str = "OrdersDlqUrl") -> list[dict[str, Any]]:
    url = run.target().output(queue)
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    while True:
        batch = (
            boto3.client("sqs")
            .receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=10,
                VisibilityTimeout=0,
                MessageAttributeNames=["All"],
                AttributeNames=["All"],
            )
            .get("Messages", [])
        )
        fresh = [m for m in batch if m["MessageId"] not in seen]
        if not fresh:
            return out
        seen.update(m["MessageId"] for m in fresh)
        out.extend(fresh)


def depth(run: PipelineRun, output: str) -> int:
    attrs = boto3.client("sqs").get_queue_attributes(
        QueueUrl=run.target().output(output),
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return int(attrs["ApproximateNumberOfMessages"]) + int(attrs["ApproximateNumberOfMessagesNotVisible"])


def send_raw(run: PipelineRun, body: str, correlation_id: str) -> None:
    boto3.client("sqs").send_message(
        QueueUrl=run.target().output("OrdersQueueUrl"),
        MessageBody=body,
        MessageAttributes={"correlation_id": {"DataType": "String", "StringValue": correlation_id}},
    )


def charges(run: PipelineRun, order_id: str) -> int:
    from local_cloud.tables import scan_all

    return sum(
        1
        for i in scan_all(run.ledger_table)
        if i.get("sk") == "op" and i.get("order_id") == order_id and i.get("status") == "captured"
    )


def throttled_order(run: PipelineRun, order_id: str) -> dict[str, Any]:
    """Submit an order whose intake is throttled on every attempt until it reaches the DLQ."""
    order = make_order(order_id, random.Random(order_id))

    def hits(method: str, table: str, attrs: dict[str, Any]) -> bool:
        return method == "put_item" and table == run.orders_table and attrs.get("order_id", {}).get("S") == order_id

    with throttle_dynamodb(hits) as counter:
        run.submit([(order, f"cid-{order_id}")])
        run.drain()
    # maxReceiveCount (3) deliveries, each throttled (botocore's own retries included: 4 calls each)
    assert counter.injected["throttle"] >= 3
    return order


def test_dlq_malformed_message_dead_lettered_after_one_receive_as_permanent(pipeline: PipelineRun) -> None:
    send_raw(pipeline, "{not json", "cid-malformed")
    pipeline.drain()
    [message] = dlq_messages(pipeline)
    attrs = {k: v["StringValue"] for k, v in message["MessageAttributes"].items()}
    assert attrs["dlq_category"] == "permanent"
    assert attrs["dlq_error_type"] == "InvalidOrder"
    assert attrs["dlq_receive_count"] == "1"
    assert attrs["correlation_id"] == "cid-malformed"
    assert attrs["dlq_source_queue"].endswith("OrdersQueue") or "OrdersQueue" in attrs["dlq_source_queue"]
    assert attrs["dlq_first_failure_time"].endswith("Z")
    assert message["Body"] == "{not json"
    assert pipeline.pollers[0].stats.records == 1  # one receive, no retries burnt
    assert any("OrdersQueueDlqDepthAlarm" in a for a in pipeline.evaluate_alarms())


def test_dlq_throttled_handler_reaches_dlq_after_max_receives_as_transient(pipeline: PipelineRun) -> None:
    throttled_order(pipeline, "dlq-throttled")
    [message] = dlq_messages(pipeline)
    # the orders queue's maxReceiveCount (5, AWS's advice for Lambda consumers), counted as SQS counts it
    assert message["Attributes"]["ApproximateReceiveCount"] in ("5", "6")
    summary = list_queues(pipeline.target())
    assert summary["orders"]["transient"]["count"] == 1
    assert summary["needs-attention"] == {}


def test_dlq_replay_dry_run_changes_nothing(pipeline: PipelineRun) -> None:
    throttled_order(pipeline, "dlq-dry")
    before = dlq_messages(pipeline)
    report = replay_queue(
        pipeline.target(), "orders", category="transient", dry_run=True, max_messages=None, rate=None, force=False
    )
    assert report["would_replay"] == [before[0]["MessageId"]] and report["replayed"] == []
    assert depth(pipeline, "OrdersQueueUrl") == 0
    assert [m["MessageId"] for m in dlq_messages(pipeline)] == [before[0]["MessageId"]]


def test_dlq_replay_transient_processes_each_once_and_twice_is_harmless(pipeline: PipelineRun) -> None:
    order = throttled_order(pipeline, "dlq-replay")
    [original] = dlq_messages(pipeline)
    target = pipeline.target()
    # Permanent ones stay unless forced.
    send_raw(pipeline, "{broken", "cid-broken")
    pipeline.drain()
    report = replay_queue(target, "orders", category=None, dry_run=False, max_messages=None, rate=None, force=False)
    assert report["replayed"] == [original["MessageId"]]
    assert any("permanent" in reason for reason in report["skipped"].values())
    pipeline.drain()
    assert charges(pipeline, "dlq-replay") == 1
    # Replay the same message again (an operator repeats the replay): no second side effect.
    boto3.client("sqs").send_message(
        QueueUrl=target.output("OrdersDlqUrl"),
        MessageBody=json.dumps(order),
        MessageAttributes={"correlation_id": {"DataType": "String", "StringValue": "cid-dlq-replay"}},
    )
    pipeline.drain()
    report = replay_queue(
        target, "orders", category="unclassified", dry_run=False, max_messages=None, rate=None, force=False
    )
    assert len(report["replayed"]) == 1
    pipeline.drain()
    assert charges(pipeline, "dlq-replay") == 1
    assert [e["name"] for e in order_executions(target, "dlq-replay")] == ["order-dlq-replay-attempt-1"]


def test_dlq_replay_interrupted_midway_loses_no_message(pipeline: PipelineRun) -> None:
    for i in range(5):
        throttled_order(pipeline, f"dlq-cut-{i}")
    assert depth(pipeline, "OrdersDlqUrl") == 5
    real_client = pipeline.target().client
    sends = {"n": 0}

    def flaky_client(service: str) -> Any:
        client = real_client(service)
        if service != "sqs" or getattr(client, "flaky", False):  # Target builds one client per service
            return client
        client.flaky = True
        original = client.send_message

        def send_message(**kwargs: Any) -> Any:
            sends["n"] += 1
            if sends["n"] > 2:
                raise RuntimeError("operator's laptop lost its connection")
            return original(**kwargs)

        client.send_message = send_message
        return client

    target = pipeline.target()
    with (
        mock.patch.object(type(target), "client", lambda self, service: flaky_client(service)),
        pytest.raises(RuntimeError),
    ):
        replay_queue(target, "orders", category="transient", dry_run=False, max_messages=None, rate=None, force=False)
    assert depth(pipeline, "OrdersQueueUrl") == 2
    assert depth(pipeline, "OrdersDlqUrl") == 3  # the rest are still there (made visible again)
    assert len(dlq_messages(pipeline)) == 3


def test_trace_shows_intake_steps_compensation_and_dlq_record(pipeline: PipelineRun) -> None:
    order = make_order("trace-me", random.Random(1), "undeliverable")
    pipeline.submit([(order, "cid-trace")])
    pipeline.drain()
    send_raw(pipeline, '{"order_id": "trace-me", "corrupted": true}', "cid-trace")  # a bad resend of the same order
    pipeline.drain()
    pipeline.ship_logs()
    events = trace(pipeline.target(), "cid-trace")
    sources = {e.source for e in events}
    text = "\n".join(f"{e.source} {e.text}" for e in events)
    assert {
        "log:intake",
        "log:reserve-inventory",
        "log:charge-payment",
        "log:ship-order",
        "log:refund-payment",
    } <= sources
    assert "dlq:orders" in sources and "InvalidOrder" in text
    assert any(s.startswith("execution:order-trace-me") for s in sources)
    for state in ("ReserveInventory", "ShipOrder", "RefundPayment", "ReleaseInventory"):
        assert state in text
    assert [e.timestamp for e in events] == sorted(e.timestamp for e in events)


class _StoodStill:
    """The work-time line of a starved process whose sampler has not turned it yet: it stands at its cap,
    so the simulated time reads the same before and after the drain's last deliveries."""

    def __init__(self, work: Any) -> None:
        value = work.now()
        self._line = (0.0, value, 0.0, value)
        self.wall_clock = work.wall_clock

    def at_wall(self, wall: float) -> float:
        return float(self._line[1])


@pytest.mark.parametrize("clock", ["running", "stood-still"])
def test_dlq_message_pages_within_a_minute_of_reaching_the_dlq(pipeline: PipelineRun, clock: str) -> None:
    """CloudWatch publishes SQS metrics every minute and the DLQ alarm is 1 period of 1 minute
    (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-available-cloudwatch-metrics.html):
    the page comes within 60 s of the message reaching the DLQ, also when the drain ends right after
    it (the run's next step may jump the clock: the sweeper's threshold, a replay), and also when the
    simulated clock did not move while the drain delivered (a starved process: decision 0025)."""
    with (
        mock.patch.object(pipeline.clock, "_work", _StoodStill(pipeline.clock._work))
        if clock != "running"
        else (nullcontext())
    ):
        pipeline.tick_alarms(before_jump=True)  # the last evaluation, at the instant the drain will end on
        send_raw(pipeline, "{not json", "cid-page-in-a-minute")
        pipeline.drain()
    [message] = dlq_messages(pipeline)
    arrived = int(message["Attributes"]["SentTimestamp"]) / 1000
    pipeline.clock.advance(3600.0)  # what the run does next: let the sweeper's threshold pass
    pipeline.evaluate_alarms()
    entered = [
        at
        for name, state, at in pipeline.alarm_evaluator.transitions
        if "OrdersQueueDlqDepthAlarm" in name and state == "ALARM" and at >= arrived - 60.0
    ]
    assert entered and 0 <= entered[0] - arrived <= 60.0
    # It keeps no action: the OrdersAtRisk composite pages for it, once per incident (decision 0030), so
    # the composite is in ALARM and its page was delivered (in this incident or the module's earlier one).
    assert "ALARM" in {s for n, s in pipeline.alarm_evaluator.composite_states().items() if "OrdersAtRisk" in n}
    pages = [n for n in pipeline.cloud.alarm_actions.history if "OrdersAtRisk" in n.alarm and n.state == "ALARM"]
    assert pages and pages[-1].delivered and pages[-1].at <= entered[0]
