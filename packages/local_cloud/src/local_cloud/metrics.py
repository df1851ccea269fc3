"""The metrics CloudWatch would hold for the local deployment, as AWS defines them, by timestamp.

Sources (each AWS definition cited where it is read):

- ``AWS/Lambda`` ``Invocations`` and ``Errors`` per ``FunctionName``: one datapoint per invocation
  at its end (where the handler's EMF documents are stamped too); ``Errors`` counts invocations
  that ended in a function error (the handler raised, or timed out), whatever the error's meaning
  to the caller
  (https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html).
- ``AWS/States`` ``ExecutionsFailed`` / ``ExecutionsTimedOut`` / ``ExecutionsAborted`` /
  ``ExecutionsSucceeded`` per ``StateMachineArn``: one per execution, in the period it stopped
  ("the number of executions that were aborted or terminated", counted when they end:
  https://docs.aws.amazon.com/step-functions/latest/dg/procedure-cw-metrics.html). moto stamps
  ``stopDate`` with the wall clock: the stop is placed at the simulated time of that wall instant
  (:meth:`local_cloud.clock.SimClock.at_wall`), never before the previous refresh (a stop the previous
  evaluation could not see yet counts in the next one instead of falling in a period already evaluated).
- Embedded metric format documents the handlers print (namespace, dimensions, value at the
  document's ``_aws.Timestamp``: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html).
- ``AWS/Lambda`` ``Throttles``, ``AWS/States`` ``ExecutionThrottled`` / ``ThrottledEvents`` and
  ``AWS/ApiGateway`` ``Count`` / ``4XXError`` / ``5XXError``: recorded where the emulator throttles or
  answers (:mod:`local_cloud.service_metrics`, which cites each definition).
- ``AWS/SQS`` ``ApproximateNumberOfMessagesVisible`` is a gauge: sampled when evaluated
  (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-available-cloudwatch-metrics.html).
"""

from __future__ import annotations

import bisect
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from local_cloud.capture import LineCapture
from local_cloud.clients import aws
from local_cloud.clock import SimClock
from local_cloud.lambda_runtime import LocalFunction
from local_cloud.moto_state import execution_status, sfn_executions
from local_cloud.service_metrics import ServiceMetrics

#: Step Functions execution metrics -> the execution status each counts.
EXECUTION_METRICS = {
    "ExecutionsFailed": "FAILED",
    "ExecutionsTimedOut": "TIMED_OUT",
    "ExecutionsAborted": "ABORTED",
    "ExecutionsSucceeded": "SUCCEEDED",
}
MetricKey = tuple[str, str, tuple[tuple[str, str], ...]]  # (namespace, metric, sorted dimensions)


def metric_key(namespace: str, name: str, dimensions: Iterable[Mapping[str, str]] | Mapping[str, str]) -> MetricKey:
    pairs = dimensions.items() if isinstance(dimensions, Mapping) else ((d["Name"], d["Value"]) for d in dimensions)
    return namespace, name, tuple(sorted((str(k), str(v)) for k, v in pairs))


class MetricStore:
    """Timestamped datapoints per metric, refreshed from the deployment before each evaluation."""

    def __init__(
        self,
        functions: Mapping[str, LocalFunction],
        state_machines: Iterable[str],
        capture: LineCapture,
        clock: SimClock | None = None,
        service: ServiceMetrics | None = None,
    ) -> None:
        self.clock = clock
        self.service = service
        self._service_seen = 0
        #: Simulated time of the previous and of the current refresh.
        self._previous_refresh = float("-inf")
        self._refreshed_at = float("-inf")
        self.functions = functions
        self.state_machines = list(state_machines)
        self.capture = capture
        self.points: dict[MetricKey, list[tuple[float, float]]] = defaultdict(list)
        self._emf_seen = 0
        self._lambda_seen: dict[str, int] = {}
        self._executions_seen: set[str] = set()
        #: Per state machine: executions listed but not counted yet (running, or no stop date yet).
        self._executions_waiting: dict[str, set[str]] = {}
        #: Per state machine, read from moto's own list: how many were read, and those not counted yet.
        self._live_seen: dict[str, int] = {}
        self._live_waiting: dict[str, list[Any]] = {}

    def refresh(self) -> None:
        """Read what happened since the last refresh (invocations, EMF documents, ended executions)."""
        self._previous_refresh = self._refreshed_at
        self._refreshed_at = self.clock.now() if self.clock is not None else float("-inf")
        for fn in self.functions.values():
            history = fn.history
            seen = self._lambda_seen.get(fn.name, 0)
            for started, errored in history[seen:]:
                self.add(metric_key("AWS/Lambda", "Invocations", {"FunctionName": fn.name}), started, 1.0)
                self.add(metric_key("AWS/Lambda", "Errors", {"FunctionName": fn.name}), started, float(errored))
            self._lambda_seen[fn.name] = len(history)
        docs = self.capture.records()[1]
        for doc in docs[self._emf_seen :]:
            self._add_emf(doc)
        self._emf_seen = len(docs)
        self._refresh_service()
        self._refresh_executions()

    def _refresh_service(self) -> None:
        """The throttles and API answers recorded since the last refresh (:mod:`local_cloud.service_metrics`)."""
        if self.service is None:
            return
        new, self._service_seen = self.service.since(self._service_seen)
        for namespace, name, dims, at, value in new:
            self.add(metric_key(namespace, name, dims), at, value)

    def _add_emf(self, doc: Mapping[str, Any]) -> None:
        meta = doc["_aws"]
        at = float(meta.get("Timestamp", 0)) / 1000
        for directive in meta.get("CloudWatchMetrics", []):
            for dims in directive.get("Dimensions", [[]]) or [[]]:
                wanted = {d: str(doc.get(d)) for d in dims}
                for metric in directive.get("Metrics", []):
                    value = doc.get(metric["Name"])
                    for v in value if isinstance(value, list) else [value]:
                        if v is not None:
                            self.add(metric_key(directive.get("Namespace", ""), metric["Name"], wanted), at, float(v))

    def _refresh_executions(self) -> None:
        """Count the executions that stopped since the previous refresh, reading only what changed.

        ListExecutions lists the most recent execution first ("Results are sorted by time, with the most
        recent execution first": https://docs.aws.amazon.com/step-functions/latest/apireference/API_ListExecutions.html).
        Pages are read until one reaches an execution listed before (the rest are older) and every execution
        still waiting (running, or stopped without its stop date yet, at a previous refresh) has been listed
        again: a refresh costs the executions started or running since the previous one, not every execution
        of the run (listing them all every simulated minute took a 2,000-order chaos run from 157 s to 221 s)."""
        for arn in self.state_machines:
            live = sfn_executions(arn)
            if live is not None:
                self._refresh_live_executions(arn, live)
            else:
                self._refresh_listed_executions(arn)

    def _refresh_live_executions(self, arn: str, live: Sequence[Any]) -> None:
        """From moto's own list (oldest first, appended as executions start): the new ones since the last
        refresh and those still waiting, without an API call (:mod:`local_cloud.moto_state`)."""
        start = self._live_seen.get(arn, 0)
        new = live[start:]  # one slice: a start on another thread meanwhile is read next time
        self._live_seen[arn] = start + len(new)
        waiting = []
        for execution in [*self._live_waiting.get(arn, []), *new]:
            status, stop = execution_status(execution), execution.stop_date
            at = self._stopped_at({"status": status, **({"stopDate": stop} if stop is not None else {})})
            if at is None:
                waiting.append(execution)
                continue
            for metric, counted in EXECUTION_METRICS.items():
                if status == counted:
                    self.add(metric_key("AWS/States", metric, {"StateMachineArn": arn}), at, 1.0)
        self._live_waiting[arn] = waiting

    def _refresh_listed_executions(self, arn: str) -> None:
        """From ListExecutions (a moto this process does not hold)."""
        sfn = aws("stepfunctions")
        waiting = self._executions_waiting.setdefault(arn, set())
        missing = set(waiting)
        for page in sfn.get_paginator("list_executions").paginate(stateMachineArn=arn):
            reached_known = False
            for e in page["executions"]:
                name = e["executionArn"]
                if name in self._executions_seen:
                    reached_known = True
                    continue
                reached_known = reached_known or name in waiting
                missing.discard(name)
                at = self._stopped_at(e)
                if at is None:
                    waiting.add(name)
                    continue
                waiting.discard(name)
                self._executions_seen.add(name)
                for metric, status in EXECUTION_METRICS.items():
                    if e["status"] == status:
                        self.add(metric_key("AWS/States", metric, {"StateMachineArn": arn}), at, 1.0)
            if reached_known and not missing:
                break

    def _stopped_at(self, execution: Mapping[str, Any]) -> float | None:
        """The simulated time an execution stopped; None while it runs, or before moto stamps its stop date
        (moto sets the status first: counted at the next refresh)."""
        if execution["status"] == "RUNNING":
            return None
        if "stopDate" in execution:
            return self._seen_at(execution["stopDate"].timestamp())
        if execution["status"] == "TIMED_OUT":  # moto's ListExecutions never gives a timed-out one's stopDate
            return self._refreshed_at if self.clock is not None else time.time()
        return None

    def _seen_at(self, stopped: float) -> float:
        """The simulated time of an execution's stop, from moto's wall-clock ``stopDate``: the
        simulated time at that wall instant, or the previous refresh's when that is earlier (the
        execution's status became visible only after that evaluation had covered its stop)."""
        if self.clock is None:
            return stopped
        return max(self.clock.at_wall(stopped), self._previous_refresh)

    def add(self, key: MetricKey, at: float, value: float) -> None:
        points = self.points[key]
        if points and at < points[-1][0]:
            bisect.insort(points, (at, value))
        else:
            points.append((at, value))

    def last_before(self, key: MetricKey, at: float) -> float | None:
        """The timestamp of the latest datapoint before ``at`` (None: there is none)."""
        points = self.points.get(key, [])
        i = bisect.bisect_left(points, (at, float("-inf")))
        return points[i - 1][0] if i else None

    def window(self, key: MetricKey, start: float, end: float) -> list[float]:
        """Values with ``start <= timestamp < end``."""
        points = self.points.get(key, [])
        lo = bisect.bisect_left(points, (start, float("-inf")))
        hi = bisect.bisect_left(points, (end, float("-inf")))
        return [v for _, v in points[lo:hi]]


def statistic(values: list[float], name: str) -> float | None:
    """CloudWatch's statistic over one period's values; None when the period has no datapoint."""
    if not values:
        return None
    if name == "Sum":
        return sum(values)
    if name == "Maximum":
        return max(values)
    if name == "Minimum":
        return min(values)
    if name == "SampleCount":
        return float(len(values))
    return sum(values) / len(values)  # Average
