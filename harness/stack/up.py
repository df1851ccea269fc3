"""``ops local up``: the deployed pipeline on a local endpoint, until Ctrl-C.

moto's server runs *in this process*, on 127.0.0.1 only, so the class-level patches of the local
run apply to its backends: Lambda invocations (from Step Functions or ``aws lambda invoke``) run
the template's handlers in-process, DynamoDB item writes are atomic, Step Functions retry waits
take simulated time. This process's boto3 clients reach the server through ``AWS_ENDPOINT_URL``,
so the deployment, the event source pollers and the handlers talk to it over HTTP, as other ops
commands do (``--endpoint-url``). A CloudFormation stack named like the deployed stack holds the
resolved outputs, so ``Target.from_stack(stack, endpoint_url=...)`` finds the resources.

When the template has a REST API (the order API), it is served too, on its own port of 127.0.0.1
(``--api-port``), by :mod:`local_cloud.apigateway` from the template's own ``AWS::ApiGateway::*``
resources: ``http://127.0.0.1:<port>/<stage>/<path>``, SigV4 with the local credentials.

The endpoint itself (moto's server, the environment, the outputs stack) is :mod:`harness.stack.local_endpoint`.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO

from harness.reporting.pager import page_line
from harness.stack.local_endpoint import PortInUse as PortInUse  # what serve raises when a port is taken
from harness.stack.local_endpoint import endpoint_environment, moto_server_in_process, register_stack, subscribe_oncall
from harness.workload.orders import OrderMix
from ops.arguments import integer, non_negative, port, positive_float

if TYPE_CHECKING:
    from harness.stack.options import RunOptions
    from harness.stack.pipeline import PipelineRun

DEFAULT_PORT = 4566
IDLE_WAIT_SECONDS = 0.1  # how long the loop sleeps when no queue has anything to deliver
UPKEEP_SECONDS = 5.0  # how often alarms are re-evaluated and captured logs shipped to CloudWatch Logs


@dataclass(frozen=True)
class UpOptions:
    port: int = DEFAULT_PORT  # 0 = any free port
    stage: str = "dev"
    assembly_dir: Path | None = None  # reuse an existing cdk.out instead of synthesizing
    orders: int = 0  # demo orders submitted at start
    seed: int = 7
    mix: OrderMix = field(default_factory=OrderMix)
    sweep_interval: float = 60.0  # seconds between firings of the scheduled rules (the sweeper)
    duration: float | None = None  # stop after this many seconds (None: until Ctrl-C / SIGTERM)
    echo_logs: bool = False
    api_port: int = 0  # the order API's port on 127.0.0.1 (0: any free port)


@dataclass(frozen=True)
class LocalEndpoint:
    """What a running ``local up`` serves: where, which stack, and the stack's outputs."""

    endpoint_url: str
    stack: str
    outputs: dict[str, str]
    region: str
    api_url: str | None = None  # the order API's stage URL, when the template has a REST API
    #: Notifications the start sent (the deploy and the alarms' first evaluation, before any order): 0 by
    #: design (no OK actions, decision 0030); ``local up --check`` exits 1 otherwise.
    start_notifications: int = 0


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """Ctrl-C / SIGTERM set ``stop`` (a second Ctrl-C interrupts at once). Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handle(signum: int, frame: FrameType | None) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        stop.set()

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def example_order(seed: int) -> dict[str, Any]:
    """An order that completes, with an ID no demo order uses."""
    from harness.workload.orders import make_orders

    clean = OrderMix(out_of_stock_rate=0.0, decline_rate=0.0, ship_fail_rate=0.0, missing_correlation_rate=0.0)
    return {**make_orders(1, seed, clean)[0][0], "order_id": "order-try-1"}


def _print_banner(info: LocalEndpoint, order: dict[str, Any], out: TextIO) -> None:
    e, stack = info.endpoint_url, info.stack
    queue = info.outputs.get("OrdersQueueUrl", "<OrdersQueueUrl>")
    width = max(map(len, info.outputs), default=0)
    lines = [
        f"local up: {stack} deployed on moto at {e} (127.0.0.1 only)",
        "",
        "stack outputs:",
        *(f"  {key:<{width}}  {value}" for key, value in sorted(info.outputs.items())),
        "",
        "from another shell (any credentials work; the region is fixed):",
        f"  export AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_DEFAULT_REGION={info.region}",
        f"  aws --endpoint-url {e} sqs send-message --queue-url {queue} \\",
        f"      --message-body '{json.dumps(order)}' \\",
        "      --message-attributes 'correlation_id={DataType=String,StringValue=cid-try-1}'",
        f"  python -m ops repair {order['order_id']} --action compensate --stack {stack} --endpoint-url {e}",
        f"  python -m ops dlq list --stack {stack} --endpoint-url {e}",
        f"  python -m ops trace cid-try-1 --stack {stack} --endpoint-url {e}",
        "",
        *_api_lines(info),
        f"notifications at start: {info.start_notifications} (a deploy notifies nobody; local up --check)",
        "Ctrl-C (or SIGTERM) stops it.",
    ]
    print("\n".join(lines), file=out, flush=True)


def _api_lines(info: LocalEndpoint) -> list[str]:
    """How to call the order API with curl (SigV4 with the local credentials)."""
    if info.api_url is None:
        return ["(the template has no REST API: no order API is served)", ""]
    from local_cloud.environment import FAKE_ENV

    sigv4 = (
        f'curl --aws-sigv4 "aws:amz:{info.region}:execute-api" '
        f'--user "{FAKE_ENV["AWS_ACCESS_KEY_ID"]}:{FAKE_ENV["AWS_SECRET_ACCESS_KEY"]}"'
    )
    return [
        f"order API (the template's REST API, 127.0.0.1 only): {info.api_url}",
        "  URL shape: http://127.0.0.1:<port>/<stage>/<path>; IAM (SigV4) auth with the local credentials:",
        f"  {sigv4} -H 'Content-Type: application/json' -H 'Idempotency-Key: k1' \\",
        f"      -X POST {info.api_url}/orders --data @docs/examples/order-123-attempt-1.json",
        f"  {sigv4} {info.api_url}/orders/order-123",
        "",
    ]


class _Loop:
    """The event source mappings, the schedules and CloudWatch's alarm evaluation, until stopped."""

    def __init__(self, run: PipelineRun, options: UpOptions, out: TextIO) -> None:
        self.run = run
        self.options = options
        self.out = out
        self.alarms: list[str] = []
        self.pages_seen = 0

    def say(self, text: str) -> None:
        print(f"[local up] {text}", file=self.out, flush=True)

    def sweep(self) -> None:
        for raw in self.run.run_schedules():
            try:
                result = json.loads(raw)
            except (TypeError, ValueError):
                continue
            if isinstance(result, dict) and result.get("stuck"):
                self.say(f"sweeper: stuck orders {result['stuck']}")

    def upkeep(self) -> None:
        alarms = self.run.evaluate_alarms()
        if alarms != self.alarms:
            self.say(f"alarms in ALARM: {', '.join(alarms) or 'none'}")
            self.alarms = alarms
        history = self.run.alarm_evaluator.actions.history if self.run.alarm_evaluator.actions else []
        for notice in history[self.pages_seen :]:
            self.say(page_line(notice))
        self.pages_seen = len(history)
        self.run.ship_logs()  # ``ops trace`` reads CloudWatch Logs

    def turn(self) -> bool:
        """Deliver what is due; when nothing is, skip simulated time to the next redelivery.
        Returns False when idle (the caller waits)."""
        if self.run.deliver():
            return True
        if self.run.step_waiting_executions():  # every running execution waits (a Retry): docs/decisions/0026
            return True
        upcoming = self.run.next_visible_at()
        if upcoming is not None and not self.run.running_executions():
            self.run.clock.advance(max(0.0, upcoming - self.run.clock.now()))
            return True
        return False

    def forever(self, stop: threading.Event) -> None:
        started = time.monotonic()
        deadline = started + self.options.duration if self.options.duration is not None else float("inf")
        next_sweep = started + self.options.sweep_interval
        next_upkeep = started
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                now = time.monotonic()
                if now >= next_sweep:
                    next_sweep = now + self.options.sweep_interval
                    self.sweep()
                if now >= next_upkeep:
                    next_upkeep = now + UPKEEP_SECONDS
                    self.upkeep()
                if not self.turn():
                    stop.wait(IDLE_WAIT_SECONDS)
            except Exception:  # a long-running service reports and keeps serving
                traceback.print_exc(file=sys.stderr)
                stop.wait(1.0)


def _run_options(options: UpOptions) -> RunOptions:
    """The run behind ``local up``: the API served on 127.0.0.1."""
    from harness.stack.options import RunOptions

    return RunOptions(
        orders=options.orders,
        seed=options.seed,
        mix=options.mix,
        stage=options.stage,
        assembly_dir=options.assembly_dir,
        echo_logs=options.echo_logs,
        serve_api=True,
        api_port=options.api_port,
    )


def serve(
    options: UpOptions,
    *,
    stop: threading.Event | None = None,
    on_ready: Callable[[LocalEndpoint], None] | None = None,
    out: TextIO | None = None,
) -> int:
    """Serve the deployed pipeline on 127.0.0.1 until ``stop`` is set, Ctrl-C / SIGTERM, or ``duration``; the
    notifications its start sent (:attr:`LocalEndpoint.start_notifications`).

    ``on_ready`` is called with the endpoint once the stack is deployed and registered.
    """
    from harness.reporting.notifications import notifications_at_start
    from harness.stack.pipeline import deployed_pipeline
    from harness.stack.synth import load_assembly
    from harness.workload.orders import make_orders
    from local_cloud.clock import SimClock
    from local_cloud.environment import moto_behaviour
    from local_cloud.template import REGION

    stop = stop or threading.Event()
    out = out or sys.stdout  # saved now: the handlers' stdout is captured while serving
    run_options = _run_options(options)
    assembly = load_assembly(run_options)  # synthesize before the endpoint opens
    with ExitStack() as stack:
        stack.enter_context(_stop_on_signals(stop))
        endpoint = stack.enter_context(moto_server_in_process(options.port))
        # Before any client exists: deployment, pollers and handlers all reach the server.
        stack.enter_context(endpoint_environment(endpoint))
        clock = SimClock()  # one clock for pollers, Lambda contexts and Step Functions retry waits
        stack.enter_context(moto_behaviour(clock))
        run = stack.enter_context(deployed_pipeline(assembly, run_options, clock))
        # The sandbox providers' ledger lives outside the template (it stands for their records):
        # expose it so the AWS CLI walkthrough can read what the providers did.
        outputs = {**run.deployment.outputs(), "SandboxLedgerTableName": run.ledger_table}
        if run.api_url:  # the API as served here (127.0.0.1), not the template's AWS invoke URL
            outputs["OrderApiUrl"] = f"{run.api_url}/"
        register_stack(assembly.stack_name, outputs)
        subscribe_oncall(outputs)  # the on-call's stand-in: ops pager check and ops smoke pass
        info = LocalEndpoint(endpoint, assembly.stack_name, outputs, REGION, run.api_url, notifications_at_start(run))
        _print_banner(info, example_order(options.seed), out)
        if options.orders:
            run.submit(make_orders(options.orders, options.seed, options.mix))
            print(f"[local up] submitted {options.orders} demo orders (seed {options.seed})", file=out, flush=True)
        if on_ready is not None:
            on_ready(info)
        loop = _Loop(run, options, out)
        loop.forever(stop)
        stats = json.dumps({p.spec.function.name: vars(p.stats) for p in run.pollers})
        print(f"[local up] stopping; event sources: {stats}", file=out, flush=True)
        return info.start_notifications


# -- CLI --------------------------------------------------------------------------------------------
def add_up_parser(local_subparsers: Any) -> argparse.ArgumentParser:
    """``python -m harness local up ...`` (``local_subparsers``: the ``local`` command's subparsers)."""
    up: argparse.ArgumentParser = local_subparsers.add_parser(
        "up", help="serve the deployed pipeline on a local endpoint (moto on 127.0.0.1) until Ctrl-C"
    )
    up.add_argument("--port", type=port, default=DEFAULT_PORT, help=f"port on 127.0.0.1 (default {DEFAULT_PORT})")
    up.add_argument("--stage", choices=("dev",), default="dev", help="dev (prod's providers are real APIs)")
    up.add_argument("--assembly", type=Path, help="use this cdk.out instead of synthesizing")
    up.add_argument("--orders", type=non_negative, default=0, help="demo orders to submit at start")
    up.add_argument("--seed", type=integer, default=7, help="seed for the demo orders (default 7)")
    up.add_argument(
        "--sweep-interval", type=positive_float, default=60.0, help="seconds between scheduled rule firings"
    )
    up.add_argument("--duration", type=positive_float, help="stop after this many seconds (default: Ctrl-C)")
    up.add_argument("--echo-logs", action="store_true", help="copy handler log lines to stderr")
    up.add_argument(
        "--api-port", type=port, default=0, help="the order API's port on 127.0.0.1 (default: any free port)"
    )
    up.add_argument("--check", action="store_true", help="exit 1 if the start sent any alarm notification")
    return up


def main_up(args: argparse.Namespace) -> int:
    options = UpOptions(
        port=args.port,
        stage=args.stage,
        assembly_dir=args.assembly,
        orders=args.orders,
        seed=args.seed,
        sweep_interval=args.sweep_interval,
        duration=args.duration,
        echo_logs=args.echo_logs,
        api_port=args.api_port,
    )
    try:
        started = serve(options)  # PortInUse is an OpsError: the CLI prints it as one line, exit status 2
    except KeyboardInterrupt:  # a second Ctrl-C
        return 130
    return 1 if getattr(args, "check", False) and started else 0
