"""The emulator's one entry point: a cloud assembly and options in, a running deployment's handles out.

::

    clock = SimClock()
    with local_aws(clock):                       # moto in this process, on the simulated clock
        cloud = LocalCloud(CloudAssembly(Path("cdk.out"), "MyStack"), clock, EmulatorOptions())
        with cloud.running(clock_hooks=[(my_clock_module, "now")], services=[serve_my_fakes]):
            ...                                  # boto3 calls reach the deployment; handlers run in-process
            cloud.deliver()                      # one turn of the SQS event source mappings
            cloud.evaluate_alarms()

What the caller plugs in goes through :meth:`LocalCloud.running`, never by patching the emulator:

- ``clock_hooks``: ``(owner, attribute)`` pairs naming a zero-argument function your handlers
  read for "now" (seconds since the epoch), e.g. ``(my_app.clock, "now")``. While the cloud runs,
  each is replaced by the simulated clock's ``now``, so timestamps your code writes follow the
  same clock as SQS, Step Functions waits and Lambda deadlines. Powertools idempotency already
  follows it (:func:`local_cloud.simtime.simulated_now`, entered by :func:`~local_cloud.environment.local_aws`).
- ``services``: callables taking the :class:`LocalCloud` and returning a context manager, entered
  last (after IAM and limit enforcement are on) and left first: fake third-party endpoints, secrets
  they need, environment rewrites of the deployed functions.

The handles out: :attr:`LocalCloud.deployment` (names, functions, queues, tables, state machines,
the IAM report while running), :attr:`~LocalCloud.pollers`, :attr:`~LocalCloud.limits` (throttle
counts), :attr:`~LocalCloud.capture` (the handlers' log lines and EMF metrics).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

from local_cloud.alarm_actions import AlarmActions
from local_cloud.alarms import AlarmEvaluator
from local_cloud.capture import LineCapture, capture_stdout, point_powertools_loggers_at
from local_cloud.clock import SimClock
from local_cloud.composite_alarms import Composites
from local_cloud.deploy import LocalDeployment
from local_cloud.event_sources import SqsPoller
from local_cloud.iam_enforce import enforce_iam
from local_cloud.limits import Quotas
from local_cloud.limits_enforce import LimitEnforcer, enforce_limits
from local_cloud.log_shipper import LogShipper
from local_cloud.metrics import MetricStore
from local_cloud.template import CloudAssembly

#: ``(owner, attribute)``: a function the caller's code reads for "now", pointed at the simulated clock.
ClockHook = tuple[Any, str]
#: A caller's service entered while the cloud runs (e.g. a fake provider on loopback).
Service = Callable[["LocalCloud"], AbstractContextManager[Any]]


@dataclass(frozen=True)
class EmulatorOptions:
    """How the emulator behaves: AWS's quotas (at 1:1 unless scaled), Lambda concurrency checks, log echo."""

    quotas: Quotas = field(default_factory=Quotas)
    lambda_concurrency_check: bool = True
    echo_logs: bool = False


class LocalCloud:
    """One cloud assembly deployed into the moto that boto3 reaches now, and its event sources.

    Construct it inside :func:`~local_cloud.environment.local_aws` (or with ``AWS_ENDPOINT_URL``
    pointing at a moto server): the deployment is created at once.
    """

    def __init__(self, assembly: CloudAssembly, clock: SimClock, options: EmulatorOptions) -> None:
        self.clock = clock
        self.capture = LineCapture(echo=sys.stderr if options.echo_logs else None)
        self.deployment = LocalDeployment(assembly, clock, self.capture).deploy()
        self.pollers = [SqsPoller(spec, clock) for spec in self.deployment.event_sources]
        self.limits = LimitEnforcer(
            options.quotas, clock, self.deployment, concurrency=options.lambda_concurrency_check
        )
        self.alarm_actions = AlarmActions(self.deployment)
        self.metrics = MetricStore(
            self.deployment.functions,
            self.deployment.state_machines.values(),
            self.capture,
            clock,
            service=self.deployment.service_metrics,
        )
        self.alarm_evaluator = AlarmEvaluator(
            self.deployment.alarms,
            self.deployment.queues,
            self.capture,
            self.alarm_actions,
            store=self.metrics,
            clock=clock,
            composites=Composites(self.deployment.composite_alarms, self.deployment.alarms),
        )
        self.shipper = LogShipper(
            self.capture,
            {
                fn.env.get("POWERTOOLS_SERVICE_NAME"): self.deployment.log_group_of(fn)
                for fn in self.deployment.functions.values()
            },
        )

    @contextmanager
    def running(
        self, *, clock_hooks: Sequence[ClockHook] = (), services: Sequence[Service] = ()
    ) -> Iterator[LocalCloud]:
        """While active: handler output captured, Lambda invocations in-process, the caller's clocks
        on the simulated one, AWS limits then IAM enforced on every call (AWS authorizes a call before
        it throttles it), then the caller's services."""
        with ExitStack() as stack:
            stack.enter_context(capture_stdout(self.capture))
            stack.enter_context(self.deployment.lambda_routing())
            for owner, attribute in clock_hooks:
                stack.enter_context(mock.patch.object(owner, attribute, self.clock.now))
            stack.enter_context(enforce_limits(self.limits))
            stack.enter_context(enforce_iam(self.deployment))
            for service in services:
                stack.enter_context(service(self))
            point_powertools_loggers_at(self.capture)
            yield self

    def deliver(self) -> int:
        """One turn of the event source mappings: a batch from each queue, or else the failed
        messages whose (simulated) visibility timeout has passed. Returns how many moved."""
        return sum(p.poll_once() for p in self.pollers) or sum(p.release_due() for p in self.pollers)

    def next_visible_at(self) -> float | None:
        """When the earliest failed message becomes visible again (simulated time), if any."""
        return min((t for p in self.pollers if (t := p.next_visible_at()) is not None), default=None)

    def next_delayed_at(self) -> float | None:
        """When the earliest delayed message (``DelaySeconds``) becomes deliverable, if known."""
        return min((t for p in self.pollers if (t := p.next_delayed_at()) is not None), default=None)

    def queued(self) -> bool:
        """Whether any event source's queue still holds a message (visible, in flight or delayed)."""
        return any(p.queue_depth() for p in self.pollers)

    def evaluate_alarms(self) -> list[str]:
        """Emulate CloudWatch's evaluation of the template's alarms; the alarms in ALARM."""
        return self.alarm_evaluator.evaluate()

    def ship_logs(self) -> int:
        """Copy captured handler log lines into moto CloudWatch Logs; how many were shipped."""
        return self.shipper.ship()
