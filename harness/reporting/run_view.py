"""What the reporter reads of a local run: :class:`RunView`, which :class:`harness.stack.pipeline.PipelineRun` is.

The pipeline imports the reporter to build its report; the reporter imports this protocol, not the
pipeline, so the two have no import cycle (not even under ``TYPE_CHECKING``).
"""

from __future__ import annotations

from typing import Any, Protocol

from harness.workload.producer import Producer
from local_cloud.alarms import AlarmEvaluator
from local_cloud.capture import LineCapture
from local_cloud.clock import SimClock
from local_cloud.deploy import LocalDeployment
from local_cloud.event_sources import SqsPoller
from local_cloud.limits_enforce import LimitEnforcer
from ops.target import Target


class RunView(Protocol):
    """A deployed order pipeline: its tables, state machine, captured output, pollers and limits."""

    clock: SimClock
    capture: LineCapture
    deployment: LocalDeployment
    pollers: list[SqsPoller]
    limits: LimitEnforcer
    alarm_evaluator: AlarmEvaluator
    producer: Producer
    orders_table: str
    inventory_table: str
    ledger_table: str
    state_machine_arn: str
    submitted: list[tuple[dict[str, Any], str | None]]

    def evaluate_alarms(self) -> list[str]: ...

    def target(self) -> Target: ...
