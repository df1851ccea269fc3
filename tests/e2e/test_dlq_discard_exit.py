"""The on-call's exit from a poison message (issue 41, open item (a)), on the local pipeline: the message in the
orders DLQ holds the DLQ's depth alarm, and so the OrdersAtRisk composite, in ALARM, and a second poison message
notified nobody. ``ops dlq discard`` archives and deletes it: the composite returns to OK, silently, and the next
incident pages again."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest

from harness.run.run import PipelineRun, RunOptions, local_pipeline
from local_cloud.template import CloudAssembly
from ops.cli import main
from tests.e2e.test_dlq import dlq_messages, send_raw

pytestmark = pytest.mark.e2e


@pytest.fixture
def pipeline(assembly: CloudAssembly) -> Iterator[PipelineRun]:
    with local_pipeline(RunOptions(assembly_dir=assembly.outdir), assembly) as run:
        yield run


def _settle(run: PipelineRun, minutes: int) -> None:
    for _ in range(minutes):
        run.clock.advance(60.0)
        run.evaluate_alarms()


def _at_risk(run: PipelineRun) -> tuple[str, int]:
    """OrdersAtRisk's state and its ALARM notifications so far."""
    (state,) = [s for n, s in run.alarm_evaluator.composite_states().items() if "OrdersAtRisk" in n]
    pages = [n for n in run.cloud.alarm_actions.history if "OrdersAtRisk" in n.alarm and n.state == "ALARM"]
    return state, len(pages)


def test_dlq_discard_clears_orders_at_risk_and_the_next_poison_pages_again(pipeline: PipelineRun) -> None:
    send_raw(pipeline, "{not json", "cid-poison-1")
    pipeline.drain()
    _settle(pipeline, 2)
    assert _at_risk(pipeline) == ("ALARM", 1)
    [poison] = dlq_messages(pipeline)
    argv = ["dlq", "discard", "--queue", "orders", "--message-id", poison["MessageId"], "--reason", "poison, OPS-7"]
    assert main(argv, target=pipeline.target()) == 0
    assert dlq_messages(pipeline) == []
    archive = boto3.client("dynamodb").get_item(
        TableName=pipeline.target().output("FailuresTableName"),
        Key={"message_id": {"S": f"discarded#{poison['MessageId']}"}},
    )["Item"]
    assert archive["body"]["S"] == "{not json" and archive["reason"]["S"] == "poison, OPS-7"
    _settle(pipeline, 12)  # the arrivals alarm's period passes too
    assert _at_risk(pipeline) == ("OK", 1)  # back to OK: no OK notification
    send_raw(pipeline, "[]", "cid-poison-2")
    pipeline.drain()
    _settle(pipeline, 2)
    assert _at_risk(pipeline) == ("ALARM", 2)  # the next incident pages again
