"""Build the template's resources in moto (the table-driven :mod:`local_cloud.deploy_plan`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from local_cloud.capture import LineCapture
from local_cloud.clock import SimClock
from local_cloud.deploy_plan import BUILT_TYPES, DEFAULT_ENTRY, PLAN
from local_cloud.event_sources import EventSourceSpec
from local_cloud.interfaces import IamReport
from local_cloud.lambda_runtime import LocalFunction, route_invocations
from local_cloud.service_metrics import ServiceMetrics
from local_cloud.template import CloudAssembly, Resolver, Resource

__all__ = ["BUILT_TYPES", "EventSourceSpec", "LocalDeployment", "LocalFunction"]


class LocalDeployment:
    """The template's queues, tables, functions, state machine and alarms, in moto.

    The one :class:`~local_cloud.interfaces.Deployment` (what the deploy plan and the enforcers read).

    Physical names are ``<stack>-<logicalId>``; every Ref/GetAtt in environment variables, the
    state machine definition, redrive policies and alarm dimensions resolves to them.
    """

    def __init__(self, assembly: CloudAssembly, clock: SimClock, capture: LineCapture | None = None) -> None:
        self.assembly = assembly
        self.clock = clock
        self.capture = capture
        self.stack = assembly.stack_name
        self.refs: dict[str, str] = {}
        self.attrs: dict[tuple[str, str], str] = {}
        self.functions: dict[str, LocalFunction] = {}  # by physical name
        self.queues: dict[str, dict[str, str]] = {}  # logical id -> {name, url, arn}
        self.dlq_ids: set[str] = set()
        self.tables: dict[str, str] = {}  # logical id -> name
        self.state_machines: dict[str, str] = {}  # logical id -> arn
        self.alarms: dict[str, dict[str, Any]] = {}  # name -> put_metric_alarm kwargs
        self.composite_alarms: dict[str, dict[str, Any]] = {}  # name -> the resolved CompositeAlarm properties
        self.event_sources: list[EventSourceSpec] = []
        self.schedules: list[tuple[str, LocalFunction]] = []  # (schedule expression, target)
        self.iam: IamReport | None = None  # set while local_cloud.iam_enforce.enforce_iam is active
        #: What the services publish about events only the emulator sees (throttles, API answers).
        self.service_metrics = ServiceMetrics(clock.now)
        for r in self.assembly.resources():
            PLAN.get(r.type, DEFAULT_ENTRY).name(self, r)
        self.resolve = Resolver(self.stack, self.refs, self.attrs)

    def deploy(self) -> LocalDeployment:
        """Create everything in moto (call inside ``mock_aws``), type by type in the plan's order."""
        by_type: dict[str, list[Resource]] = {}
        for r in self.assembly.resources():
            by_type.setdefault(r.type, []).append(r)
        for type_, entry in PLAN.items():
            if entry.build is not None:
                entry.build(self, by_type.get(type_, []))
        return self

    def outputs(self) -> dict[str, str]:
        """The template's Outputs, resolved against the local resources (as CloudFormation would)."""
        return {k: str(self.resolve(v["Value"])) for k, v in self.assembly.template.get("Outputs", {}).items()}

    def log_group_of(self, function: LocalFunction) -> str | None:
        """The function's log group name (its LoggingConfig), as deployed."""
        config = self.assembly.resource(function.logical_id).properties.get("LoggingConfig", {})
        group = config.get("LogGroup")
        return str(self.resolve(group)) if group else None

    @contextmanager
    def lambda_routing(self) -> Iterator[None]:
        """Route moto's Lambda invocations (from Step Functions or boto3) to the in-process handlers."""
        with route_invocations(self.functions):
            yield

    def function(self, logical_prefix: str) -> LocalFunction:
        """The function whose logical ID starts with ``logical_prefix`` (e.g. ``Intake``)."""
        matches = [f for f in self.functions.values() if f.logical_id.startswith(logical_prefix)]
        if len(matches) != 1:
            raise KeyError(f"{len(matches)} functions match {logical_prefix!r}")
        return matches[0]

    def table(self, logical_prefix: str) -> str:
        """The physical name of the table whose logical ID starts with ``logical_prefix``."""
        matches = [name for lid, name in self.tables.items() if lid.startswith(logical_prefix)]
        if len(matches) != 1:
            raise KeyError(f"{len(matches)} tables match {logical_prefix!r}")
        return matches[0]
