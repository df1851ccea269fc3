"""``python -m local_cloud up|run --assembly <cdk.out> --stack <name>``: any synthesized CDK app on the emulator.

- ``run``: deploy into moto in this process, send ``--send QUEUE=BODY`` messages, start ``--start MACHINE=INPUT``
  executions, throttle the first N item calls of ``--throttle TABLE=N``, drive queues, functions, state machines,
  schedules and alarms until the app settles, print a JSON report (executions and the states they entered, task
  failures retried, invocations, queue depths, alarms, pages). ``--expect-no-pages``: exit 1 if anyone was paged.
- ``up``: serve the deployed app on a moto endpoint on 127.0.0.1 (``--port``) until Ctrl-C or ``--duration``; the
  AWS CLI or boto3 with ``--endpoint-url`` reach it; pages are printed as they happen.

A mistake (no assembly, no such stack, a name that matches nothing) is one line on stderr, exit status 2.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, TextIO

from local_cloud.app_run import PAGE_STATES, RunPlan, open_assembly, run_app, split_pair
from local_cloud.errors import LocalCloudError, UsageError
from local_cloud.template import CloudAssembly

IDLE_WAIT_SECONDS = 0.1


def _count(text: str) -> tuple[str, int]:
    name, value = split_pair("throttle", text)
    if not value.isdigit() or int(value) < 1:
        raise UsageError(f"--throttle {text!r}: expected TABLE=N with N a positive integer")
    return name, int(value)


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(prog="python -m local_cloud", description=__doc__.split("\n\n")[0])
    commands = main.add_subparsers(dest="command", required=True)
    for name, text in (("run", "deploy, run what you send, report as JSON"), ("up", "serve on 127.0.0.1 until Ctrl-C")):
        command = commands.add_parser(name, help=text)
        command.add_argument("--assembly", type=Path, required=True, help="the synthesized cloud assembly (cdk.out)")
        command.add_argument("--stack", required=True, help="the stack to deploy (its artifact ID or stack name)")
        command.add_argument("--echo-logs", action="store_true", help="copy the handlers' log lines to stderr")
    run = commands.choices["run"]
    run.add_argument("--send", action="append", default=[], metavar="QUEUE=BODY", help="a message (BODY or @file)")
    run.add_argument("--start", action="append", default=[], metavar="MACHINE=INPUT", help="an execution (JSON)")
    run.add_argument("--throttle", action="append", default=[], metavar="TABLE=N", help="throttle N item calls")
    run.add_argument("--timeout", type=float, default=60.0, help="wall seconds without progress before giving up")
    run.add_argument("--expect-no-pages", action="store_true", help="exit 1 when an alarm paged")
    up = commands.choices["up"]
    up.add_argument("--port", type=int, default=4566, help="port on 127.0.0.1 (0: any free port)")
    up.add_argument("--duration", type=float, help="stop after this many seconds (default: Ctrl-C)")
    return main


def main_run(args: argparse.Namespace, assembly: CloudAssembly, out: TextIO) -> int:
    plan = RunPlan(
        send=[split_pair("send", s) for s in args.send],
        start=[split_pair("start", s) for s in args.start],
        throttle=[_count(t) for t in args.throttle],
        timeout_seconds=args.timeout,
        echo_logs=args.echo_logs,
    )
    result = run_app(assembly, plan)
    print(json.dumps(result, indent=2, sort_keys=True), file=out, flush=True)
    return 1 if args.expect_no_pages and result["pages"] else 0


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """Ctrl-C / SIGTERM set ``stop`` (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _banner(endpoint: str, cloud: Any) -> list[str]:
    deployment = cloud.deployment
    return [
        f"local_cloud up: {deployment.stack} on moto at {endpoint} (127.0.0.1 only); Ctrl-C stops it",
        *(f"  queue          {logical}: {q['url']}" for logical, q in sorted(deployment.queues.items())),
        *(f"  state machine  {logical}: {arn}" for logical, arn in sorted(deployment.state_machines.items())),
        *(f"  table          {logical}: {name}" for logical, name in sorted(deployment.tables.items())),
        *(f"  output         {key}: {value}" for key, value in sorted(deployment.outputs().items())),
        f"  e.g. AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local aws --endpoint-url {endpoint} sqs list-queues",
    ]


def serve(assembly: CloudAssembly, args: argparse.Namespace, out: TextIO, stop: threading.Event) -> None:
    """Deploy on a moto server on 127.0.0.1 in this process and drive the app until ``stop`` or the duration."""
    from local_cloud.clock import SimClock
    from local_cloud.driver import Driver
    from local_cloud.emulator import EmulatorOptions, LocalCloud
    from local_cloud.endpoint import endpoint_environment, moto_server_in_process, register_stack
    from local_cloud.environment import moto_behaviour

    with ExitStack() as stack:
        stack.enter_context(_stop_on_signals(stop))
        endpoint = stack.enter_context(moto_server_in_process(args.port))
        stack.enter_context(endpoint_environment(endpoint))
        clock = SimClock()
        stack.enter_context(moto_behaviour(clock))
        cloud = LocalCloud(assembly, clock, EmulatorOptions(echo_logs=args.echo_logs))
        stack.enter_context(cloud.running())
        register_stack(assembly.stack_name, cloud.deployment.outputs())
        print("\n".join(_banner(endpoint, cloud)), file=out, flush=True)
        driver, seen = Driver(cloud), 0
        deadline = time.monotonic() + args.duration if args.duration is not None else float("inf")
        while not stop.is_set() and time.monotonic() < deadline:
            if not driver.turn():
                stop.wait(IDLE_WAIT_SECONDS)
            for notice in cloud.alarm_actions.history[seen:]:
                if notice.state in PAGE_STATES:
                    print(f"[local_cloud] page {notice.state} {notice.alarm}: {notice.reason}", file=out, flush=True)
            seen = len(cloud.alarm_actions.history)


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    args = parser().parse_args(argv)
    try:
        assembly = open_assembly(args.assembly, args.stack)
        if args.command == "run":
            return main_run(args, assembly, out)
        serve(assembly, args, out, threading.Event())
    except (LocalCloudError, TimeoutError) as exc:
        print(f"local_cloud: {exc}", file=sys.stderr, flush=True)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0
