"""Every parked order has an exit, operators page nobody, and the parked-orders alarm follows reality
(issue 40, Build point 4 and "No exit"; issue 41, "every ``ops repair --action compensate`` pages"),
through the real (synthesized) ASL on moto, the sweeper on its schedule and the alarms as CloudWatch
evaluates them.

- A parked order whose compensations all ran (their last outcome write failed): ``ops repair --action
  compensate`` records COMPENSATED. Before, the repair's MarkCompensated condition failed,
  ``OutcomeAlreadyRecorded`` ended the execution SUCCEEDED and the order stayed NEEDS_ATTENTION for good.
- A parked order whose parcel left but whose COMPLETED write failed: ``ops repair --action redrive``
  finishes it (COMPLETED, one parcel).
- A parked order a person settled by hand: ``ops resolve``.
- ``ParkedOrders`` returns to OK once none is parked, the exits notify nobody, and a new park pages again.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import boto3
import pytest
from moto.dynamodb.exceptions import DynamodbException

from harness.run.run import PipelineRun, RunOptions, local_pipeline
from harness.workload.orders import make_order
from local_cloud.template import CloudAssembly
from ops.repair import repair

pytestmark = pytest.mark.e2e
PARKED_ALARM = "ParkedOrdersAlarm"


@pytest.fixture(scope="module")
def pipeline(assembly: CloudAssembly) -> Iterator[PipelineRun]:
    with local_pipeline(RunOptions(assembly_dir=assembly.outdir), assembly) as run:
        yield run


class AccessDenied(DynamodbException):
    def __init__(self) -> None:
        super().__init__("com.amazonaws.dynamodb.v20120810#AccessDeniedException", message="Injected: access denied")


@contextmanager
def failing_outcome_write(order_id: str, *to: str) -> Iterator[None]:
    """Every UpdateItem moving ``order_id`` to one of ``to`` is refused (the step's own write and the saga's
    direct Mark* write alike), from moto's backend as AWS would answer."""
    from moto.dynamodb.models import DynamoDBBackend

    original = DynamoDBBackend.update_item

    @functools.wraps(original)
    def update_item(self: Any, *args: Any, **kwargs: Any) -> Any:
        key = kwargs.get("key") or (args[1] if len(args) > 1 else {})
        values = kwargs.get("expression_attribute_values") or (args[4] if len(args) > 4 else {}) or {}
        if key.get("order_id", {}).get("S") == order_id and values.get(":to", {}).get("S") in to:
            raise AccessDenied()
        return original(self, *args, **kwargs)

    with mock.patch.object(DynamoDBBackend, "update_item", update_item):
        yield


def _status(run: PipelineRun, order_id: str) -> str:
    item = boto3.client("dynamodb").get_item(TableName=run.orders_table, Key={"order_id": {"S": order_id}})["Item"]
    return str(item["status"]["S"])


def _park(run: PipelineRun, order_id: str, kind: str, *failing: str) -> None:
    """Park ``order_id``: its ``failing`` outcome writes are refused."""
    with failing_outcome_write(order_id, *failing):
        run.submit([(make_order(order_id, random.Random(order_id), kind), f"cid-{order_id}")])
        run.drain()
    assert _status(run, order_id) == "NEEDS_ATTENTION"


def _notices(run: PipelineRun) -> list[Any]:
    actions = run.alarm_evaluator.actions
    return list(actions.history) if actions else []


def _ships(run: PipelineRun, order_id: str) -> list[str]:
    from local_cloud.tables import scan_all

    return [
        str(op["status"])
        for op in scan_all(run.ledger_table)
        if op.get("order_id") == order_id and op.get("sk") == "op" and op.get("action") == "ship"
    ]


def test_repair_exits_each_parked_order_leaves_and_the_parked_alarm_follows(pipeline: PipelineRun) -> None:
    run = pipeline
    # Every compensation ran (the address is undeliverable: refunded, released), the last one's COMPENSATED write
    # failed. (A valid order whose ShipOrder keeps failing parks with nothing undone since decision 0032.)
    _park(run, "exit-undone", "undeliverable", "COMPENSATED")
    _park(run, "exit-shipped", "ok", "COMPLETED")  # the parcel left: its write failed, nothing undone
    _park(run, "exit-manual", "undeliverable", "COMPENSATED")
    run.advance(600)  # two sweeps count them
    assert any(PARKED_ALARM in a for a in run.evaluate_alarms())
    seen = len(_notices(run))
    target = run.target()

    repair(target, "exit-undone", "compensate", reason="refund and release confirmed, outcome write failed")
    run.drain()
    assert _status(run, "exit-undone") == "COMPENSATED"
    repair(target, "exit-shipped", "redrive", reason="carrier shows the parcel delivered")
    run.drain()
    assert (_status(run, "exit-shipped"), _ships(run, "exit-shipped")) == ("COMPLETED", ["shipped"])
    from ops.resolve import resolve

    resolve(target, "exit-manual", "compensated", "refund confirmed in the processor dashboard, ticket OPS-1")
    assert _status(run, "exit-manual") == "COMPENSATED"

    run.advance(1200)  # the sweeps count none; the alarm's 10-minute period passes
    assert not any(PARKED_ALARM in a for a in run.evaluate_alarms())
    assert set(run.alarm_evaluator.composite_states().values()) == {"OK"}
    after = _notices(run)[seen:]
    assert [(n.alarm, n.state) for n in after if n.state != "OK"] == []  # the operators' actions paged nobody
    # Back to OK sends nothing (no alarm notifies on OK: a deploy would send one per alarm, decision 0030); the
    # state is what the next park needs: a new transition to ALARM.

    seen = len(_notices(run))
    _park(run, "exit-again", "undeliverable", "COMPENSATED")
    run.advance(600)
    # The park pages through OrdersAtRisk (one notification per incident, decision 0030): it went back to OK
    # when the last parked order left, so the new park notifies again.

    assert [n.state for n in _notices(run)[seen:] if "OrdersAtRisk" in n.alarm] == ["ALARM"]


def test_oncall_repair_parked_redrives_what_the_runbook_says_and_leaves_the_rest(pipeline: PipelineRun) -> None:
    """``--repair-parked`` (harness.run.oncall): the needs-attention runbook's answer, with the product's ``ops``
    functions: a valid order parked with nothing undone is redriven and completes (a sale recovered, no longer
    lost); one whose compensation ran is refused, left for a person; the section counts both."""
    from harness.run.oncall import oncall_line, repair_parked_as_operator

    run = pipeline
    _park(run, "oncall-shipped", "ok", "COMPLETED")  # nothing undone: the runbook redrives it
    _park(run, "oncall-undone", "undeliverable", "COMPENSATED")  # a compensation ran: left for a person
    report: dict[str, Any] = {"ops_commands": []}
    section = repair_parked_as_operator(run, report)
    assert (_status(run, "oncall-shipped"), _ships(run, "oncall-shipped")) == ("COMPLETED", ["shipped"])
    assert _status(run, "oncall-undone") == "NEEDS_ATTENTION"
    assert section["redriven"] == section["completed"] >= 1
    assert section["refused"].get("compensation_ran", 0) >= 1
    assert section["lost_before"]["lost"] - section["lost_after"]["lost"] == section["completed"]
    assert [c["command"] for c in report["ops_commands"]] == ["repair --action redrive"]
    assert "redriven" in oncall_line(section)
