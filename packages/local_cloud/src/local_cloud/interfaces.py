"""The shapes the emulator's parts share, so none imports another only to name its type.

:class:`Deployment` is what the deploy plan (:mod:`local_cloud.deploy_plan`), the IAM enforcer
(:mod:`local_cloud.iam_enforce`) and the limit enforcer (:mod:`local_cloud.limits_enforce`) read
of a deployment; :class:`~local_cloud.deploy.LocalDeployment` is the one implementation. It imports
those modules; they import this one, never ``deploy``: the import graph has no cycle, not even
under ``TYPE_CHECKING``.
"""

from __future__ import annotations

from typing import Any, Protocol

from local_cloud.capture import LineCapture
from local_cloud.clock import SimClock
from local_cloud.event_sources import EventSourceSpec
from local_cloud.lambda_runtime import LocalFunction
from local_cloud.service_metrics import ServiceMetrics
from local_cloud.template import CloudAssembly, Resolver


class IamReport(Protocol):
    """The IAM enforcer as a deployment holds it while active: its per-principal report."""

    def report(self) -> dict[str, Any]: ...


class Deployment(Protocol):
    """A template deployed in moto: physical names, the resources built, and how to resolve the template's values."""

    assembly: CloudAssembly
    clock: SimClock
    capture: LineCapture | None
    stack: str
    refs: dict[str, str]  # logical id -> Ref value
    attrs: dict[tuple[str, str], str]  # (logical id, attribute) -> Fn::GetAtt value
    functions: dict[str, LocalFunction]  # by physical name
    queues: dict[str, dict[str, str]]  # logical id -> {name, url, arn}
    dlq_ids: set[str]
    tables: dict[str, str]  # logical id -> name
    state_machines: dict[str, str]  # logical id -> arn
    alarms: dict[str, dict[str, Any]]  # name -> put_metric_alarm kwargs
    composite_alarms: dict[str, dict[str, Any]]  # name -> resolved AWS::CloudWatch::CompositeAlarm properties
    event_sources: list[EventSourceSpec]
    schedules: list[tuple[str, LocalFunction]]  # (schedule expression, target)
    iam: IamReport | None  # set while local_cloud.iam_enforce.enforce_iam is active
    service_metrics: ServiceMetrics  # datapoints of throttles and API answers (local_cloud.service_metrics)
    resolve: Resolver

    def log_group_of(self, function: LocalFunction) -> str | None: ...
