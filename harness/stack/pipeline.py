"""One deployed pipeline in moto and the event loop that drives it.

:class:`PipelineRun` is the order app on the emulator (:class:`local_cloud.emulator.LocalCloud`: the
deployment, the SQS event source pollers, the alarm evaluator, the log shipper and the limit
enforcer) plus the app's own parts: the producer, the sandbox providers and their ledger, and
the handlers' clock (``order_domain.clock``) wired to the simulated one through the emulator's
``clock_hooks``. Its :meth:`~PipelineRun.drain` is the event loop (deliver, wait for executions,
advance simulated time).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import order_domain.clock
from harness.reporting import reporter
from harness.stack.options import RunOptions
from harness.stack.synth import LOCAL_PROVIDER_ORIGIN, LOCAL_SECRETS, load_assembly
from harness.workload.api_client import OrderApi, has_rest_api, serve_order_api
from harness.workload.hostile import HostileExecution
from harness.workload.producer import Message, Producer
from local_cloud.calls import outside_the_pipeline
from local_cloud.clients import aws
from local_cloud.clock import SimClock
from local_cloud.driver import run_executions
from local_cloud.emulator import EmulatorOptions, LocalCloud
from local_cloud.environment import local_aws
from local_cloud.moto_state import executes_here
from local_cloud.schedules import Scheduled, Schedules
from local_cloud.sfn_waits import running_executions
from local_cloud.template import ACCOUNT, REGION, CloudAssembly
from ops.errors import OpsError
from ops.target import Target
from sandbox.http_server import serve_sandbox

#: The sandbox ledger, outside the template (it stands for the providers' own records).
LOCAL_LEDGER_TABLE = "local-sandbox-ledger"
#: The event EventBridge sends a scheduled rule's target.
SCHEDULED_EVENT = {"source": "aws.events", "detail-type": "Scheduled Event"}


class PipelineRun:
    """One local run: deployment, producer, pollers, the loop that drains them, and the report."""

    def __init__(self, assembly: CloudAssembly, options: RunOptions, clock: SimClock) -> None:
        self.options = options
        self.clock = clock
        self.cloud = LocalCloud(
            assembly,
            clock,
            EmulatorOptions(
                quotas=options.quotas,
                lambda_concurrency_check=options.lambda_concurrency_check,
                echo_logs=options.echo_logs,
            ),
        )
        self.capture = self.cloud.capture
        self.deployment = self.cloud.deployment
        self.pollers = self.cloud.pollers
        self.limits = self.cloud.limits
        self.alarm_evaluator = self.cloud.alarm_evaluator
        self.shipper = self.cloud.shipper
        self.orders_table = self.deployment.table("OrdersTable")
        self.inventory_table = self.deployment.table("InventoryTable")
        self.ledger_table = create_local_ledger()
        self.state_machine_arn = next(iter(self.deployment.state_machines.values()))
        #: Where moto runs the executions in this process, the prefix of their ARNs in its records (else None:
        #: ask ListExecutions). Decided once: the backend does not change during a run.
        self._executions_here = (
            self.state_machine_arn.replace(":stateMachine:", ":execution:", 1) + ":"
            if executes_here(ACCOUNT, REGION)
            else None
        )
        self.submitted: list[tuple[dict[str, Any], str | None]] = []
        self.producer = Producer(self.pollers[0].spec.queue_url, self.state_machine_arn, self.inventory_table)
        self.api_url: str | None = None  # the order API's stage URL while it is served
        #: The scheduled rules whose targets fire on the simulated clock (``options.scheduled_targets``).
        self.schedules: Schedules[Any] = Schedules(
            [(e, fn) for e, fn in self.deployment.schedules if fn.logical_id.startswith(options.scheduled_targets)],
            clock.now(),
        )

    # -- producer ---------------------------------------------------------------------------------
    def seed_inventory(self) -> None:
        self.producer.seed_inventory()

    def submit_messages(self, messages: list[Message]) -> None:
        """Send raw bodies (with optional correlation IDs) like a producer; retry what SQS refuses."""
        self.producer.submit_messages(messages)

    def submit(self, orders: list[tuple[dict[str, Any], str | None]]) -> None:
        """Send orders to the orders queue like a producer would (correlation ID as a message attribute)."""
        self.producer.submit(orders)
        self.submitted.extend(orders)

    def start_hostile_executions(self, executions: list[HostileExecution]) -> None:
        self.producer.start_hostile_executions(executions)

    # -- event loop -------------------------------------------------------------------------------
    def running_executions(self) -> bool:
        """Whether an execution of the saga still runs. Where moto runs in this process, from its records:
        this loop is not an AWS client (ListExecutions is eventually consistent, and the fault matrix's
        lagging-read actor hides orders from it); elsewhere, ListExecutions (one result is enough)."""
        if (prefix := self._executions_here) is not None:
            return any(arn.startswith(prefix) for arn in running_executions())
        response = aws("stepfunctions").list_executions(
            stateMachineArn=self.state_machine_arn, statusFilter="RUNNING", maxResults=1
        )
        return bool(response["executions"])

    def deliver(self) -> int:
        """One turn of the event source mappings: a batch from each queue, or else the failed
        messages whose (simulated) visibility timeout has passed. Returns how many moved."""
        return self.cloud.deliver()

    def next_visible_at(self) -> float | None:
        """When the earliest failed message becomes visible again (simulated time), if any."""
        return self.cloud.next_visible_at()

    def progress(self) -> int:
        """Function invocations so far: a running execution that invokes nothing, with no message delivered,
        is not moving."""
        return sum(len(fn.history) for fn in self.deployment.functions.values())

    def drain(self) -> None:
        """Poll until queues are empty and no execution runs; advance simulated time when idle.

        ``timeout_seconds`` bounds a pipeline that stopped moving (no message delivered and no function invoked
        for that long), not a slow one: a 2,000-order run on a loaded machine outlived a fixed wall-clock
        deadline while still delivering."""
        timeout = self.options.timeout_seconds
        deadline, moved = time.monotonic() + timeout, self.progress()
        while time.monotonic() < deadline:
            self.fire_schedules()
            self.tick_alarms()
            now_moved = self.progress()
            if now_moved != moved:
                moved, deadline = now_moved, time.monotonic() + timeout
            if self.deliver():
                deadline = time.monotonic() + timeout
                continue
            if self.running_executions():
                self.run_executions()
                continue
            upcoming = self.next_visible_at()
            if upcoming is not None:
                self.tick_alarms(before_jump=upcoming - self.clock.now() >= 60)
                self._step_clock(max(0.0, upcoming - self.clock.now()))
                continue
            if not self.cloud.queued():
                # Settled: CloudWatch keeps evaluating every minute whatever the caller does next
                # (a clock jump to the sweeper's threshold, a replay): what reached a DLQ in this
                # minute pages now, not at the next evaluation after the jump.
                self.tick_alarms(before_jump=True)
                return
            # Only delayed messages remain (a throttled record requeued with DelaySeconds): SQS
            # reads the simulated clock (sqs_on_clock), so move it to the earliest one's due time
            # (nothing else happens meanwhile), or a second at a time where that is not known.
            delayed = self.cloud.next_delayed_at()
            self.tick_alarms(before_jump=delayed is not None and delayed - self.clock.now() >= 60)
            self._step_clock(max(1.0, delayed - self.clock.now()) if delayed is not None else 1.0)
        raise TimeoutError(f"pipeline made no progress (no message delivered, no function invoked) for {timeout:g} s")

    def step_waiting_executions(self) -> str | None:
        """When every running execution waits for simulated time (a Retry wait, a crashed invocation's
        timeout: docs/decisions/0026) and no message was deliverable, nothing but the clock can move: step it
        to the earliest of the first wait's end, the next redelivery or delayed message, the next
        scheduled run and the next minute (where alarms are evaluated). Returns what it stepped to: a wait's
        end or a minute ("wait"), a message or a scheduled run that is now due ("due"), or None (no step)."""
        now = self.clock.now()
        target = self.clock.earliest_wait(running_executions())
        if target is None:
            return None
        due = min(
            (
                t
                for t in (self.next_visible_at(), self.cloud.next_delayed_at(), self.schedules.next_at())
                if t is not None
            ),
            default=float("inf"),
        )
        if due <= now:
            return "due"  # the loop's next turn delivers it or fires it
        step_to = min(target, due, (now // 60 + 1) * 60)
        self._step_clock(step_to - now)
        self.tick_alarms()  # a minute boundary: CloudWatch evaluates
        return "due" if step_to == due else "wait"

    def run_executions(self) -> None:
        """While executions run and no message is deliverable: :func:`local_cloud.driver.run_executions`."""
        run_executions(self.clock, self.step_waiting_executions)

    # -- EventBridge schedules and the passage of time -------------------------------------------
    def schedule(self, prefix: str) -> Scheduled[Any]:
        """The scheduled rule whose target's logical ID starts with ``prefix`` (e.g. ``"Sweeper"``)."""
        for rule in self.schedules.rules:
            if rule.target.logical_id.startswith(prefix):
                return rule
        raise KeyError(f"no scheduled rule fires a target named {prefix}* in this run (scheduled_targets)")

    def pause_schedule(self, prefix: str, start: float, until: float) -> None:
        """Skip the runs of ``prefix``'s schedule due in [start, until): the schedule stopped."""
        self.schedules.pause(self.schedule(prefix), start, until)

    def fire_schedules(self) -> int:
        """Run each scheduled target whose time has come (synchronously, as EventBridge's async invoke
        would run it); how many ran."""
        due = self.schedules.due(self.clock.now())
        for rule, _ in due:
            rule.target.invoke(dict(SCHEDULED_EVENT))
        return len(due)

    def _step_clock(self, seconds: float) -> None:
        """Move the simulated clock ``seconds`` ahead, stopping at each scheduled run on the way to fire it
        (a jump must not skip the sweeper's schedule) and evaluating alarms before each jump."""
        end = self.clock.now() + seconds
        while (upcoming := self.schedules.next_at()) is not None and upcoming <= end:
            self.tick_alarms(before_jump=True)
            self.clock.advance(max(0.0, upcoming - self.clock.now()))
            self.fire_schedules()
        self.clock.advance(max(0.0, end - self.clock.now()))

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` of simulated time pass as on AWS: scheduled targets run on their schedule and what
        they start is drained; CloudWatch evaluates alarms every minute on the way."""
        end = self.clock.now() + seconds
        while (upcoming := self.schedules.next_at()) is not None and upcoming <= end:
            self._step_clock(max(0.0, upcoming - self.clock.now()))
            self.drain()
        self.tick_alarms(before_jump=True)
        self._step_clock(max(0.0, end - self.clock.now()))
        self.tick_alarms(before_jump=True)

    def run_schedules(self, only: str | None = None) -> list[str]:
        """Fire each scheduled rule's target once (sweeper, DLQ replay); returns the raw results.

        ``only``: fire just the targets whose logical ID starts with it (e.g. ``"Sweeper"``).
        """
        return [
            fn.invoke({"source": "aws.events", "detail-type": "Scheduled Event"})[0]
            for _, fn in self.deployment.schedules
            if only is None or fn.logical_id.startswith(only)
        ]

    def sweep(self) -> list[str]:
        """Run the stuck-order sweeper once; the IDs of the stuck orders it found."""
        results = [json.loads(r) for r in self.run_schedules(only="Sweeper")]
        return [order_id for r in results for order_id in r.get("stuck", [])]

    # -- CloudWatch -------------------------------------------------------------------------------
    def tick_alarms(self, *, before_jump: bool = False) -> None:
        """CloudWatch evaluates alarms every minute: evaluate when the simulated clock has entered a
        new minute since the last evaluation, and before the clock jumps over idle time (what
        happened this minute pages now, not after the jump), even at the instant of the last
        evaluation: a starved process's clock can stand still while messages reach a DLQ."""
        now = self.clock.now()
        minute = int(now // 60)
        last = getattr(self, "_alarm_at", None)
        if last is None or minute != int(last // 60) or before_jump:
            self._alarm_at = now
            self.cloud.evaluate_alarms()

    def evaluate_alarms(self) -> list[str]:
        """Emulate CloudWatch's evaluation of the template's alarms; return the alarms in ALARM."""
        return self.cloud.evaluate_alarms()

    def ship_logs(self) -> int:
        """Copy captured handler log lines into moto CloudWatch Logs (``ops trace`` reads them there)."""
        return self.cloud.ship_logs()

    # -- reporting --------------------------------------------------------------------------------
    def target(self) -> Target:
        """The ops target for this deployment: the same commands as against a deployed stack. moto is one server:
        a short poll sees every message, so the DLQ reads short-poll (a long poll would only wait)."""
        return Target(self.deployment.outputs(), region=REGION, sqs_wait_seconds=0)

    def order_summary(self) -> tuple[dict[str, int], list[dict[str, Any]]]:
        """Order counts by outcome, and each submitted order's status and correlation ID."""
        return reporter.order_summary(self)

    def report(self, wall_seconds: float) -> dict[str, Any]:
        return reporter.report(self, wall_seconds)


def create_local_ledger() -> str:
    """The sandbox providers' ledger table in moto (pk/sk), outside the template."""
    ddb = aws("dynamodb")
    with suppress(ddb.exceptions.ResourceInUseException):
        ddb.create_table(
            TableName=LOCAL_LEDGER_TABLE,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
    return LOCAL_LEDGER_TABLE


@contextmanager
def serve_local_providers(run: PipelineRun) -> Iterator[None]:
    """Serve the sandbox on 127.0.0.1, store its API key in the secrets the template names, and
    point every function's provider URL at the server (replacing the template's placeholder)."""
    with serve_sandbox(run.ledger_table, request_scope=outside_the_pipeline) as endpoints:
        secrets = aws("secretsmanager")
        for name in LOCAL_SECRETS.values():
            value = json.dumps({"api_key": endpoints.api_key})
            try:
                secrets.create_secret(Name=name, SecretString=value)
            except secrets.exceptions.ResourceExistsException:
                secrets.put_secret_value(SecretId=name, SecretString=value)
        origin = endpoints.payment_url.rsplit("/", 1)[0]
        for name, fn in run.deployment.functions.items():
            fn.env = {
                k: v.replace(LOCAL_PROVIDER_ORIGIN, origin) if isinstance(v, str) else v for k, v in fn.env.items()
            }
            # GetFunctionConfiguration answers the environment the function runs with, as on AWS
            # (https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html): ops smoke reads it.
            aws("lambda").update_function_configuration(FunctionName=name, Environment={"Variables": fn.env})
        yield


class NoOrderApi(OpsError, RuntimeError):
    """``--via api`` on a template without a REST API."""


@contextmanager
def serve_front_door(run: PipelineRun) -> Iterator[None]:
    """The template's REST API on 127.0.0.1 (``--via api``, or ``serve_api``); with ``--via api``
    the producer POSTs orders to it instead of calling SendMessage."""
    options = run.options
    if options.via != "api" and not options.serve_api:
        yield
        return
    if not has_rest_api(run.deployment):
        if options.via == "api":
            raise NoOrderApi("--via api: the synthesized template has no AWS::ApiGateway::RestApi")
        yield
        return
    with serve_order_api(run.deployment, options.api_port) as (_, url):
        run.api_url = url
        if options.via == "api":
            run.producer.api = OrderApi(url)
        yield


#: The handlers' wall clock (``order_domain.clock.now``: order stamps, the sweeper's cutoff), on the run's clock.
HANDLER_CLOCKS = ((order_domain.clock, "now"),)


@contextmanager
def deployed_pipeline(assembly: CloudAssembly, options: RunOptions, clock: SimClock) -> Iterator[PipelineRun]:
    """Deploy into the moto that boto3 reaches now (``mock_aws``, or a server via ``AWS_ENDPOINT_URL``),
    with Lambda routing and log capture on, stock seeded. The caller provides that environment."""
    run = PipelineRun(assembly, options, clock)
    services = [lambda _cloud: serve_local_providers(run), lambda _cloud: serve_front_door(run)]
    with run.cloud.running(clock_hooks=HANDLER_CLOCKS, services=services):
        run.seed_inventory()
        yield run


@contextmanager
def local_pipeline(options: RunOptions, assembly: CloudAssembly | None = None) -> Iterator[PipelineRun]:
    """The deployed pipeline in moto, with Lambda routing and log capture on, stock seeded."""
    assembly = assembly or load_assembly(options)
    clock = SimClock()  # one clock for pollers, Lambda contexts and Step Functions retry waits
    with local_aws(clock), deployed_pipeline(assembly, options, clock) as run:
        yield run
