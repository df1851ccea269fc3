"""``python -m harness``: the workshop's entry point. ``local`` (run, faults, spike, up: the pipeline on this
machine, against moto) and ``capacity`` (the quota model, on the emulator's quota table); the run command's
own options and output: :mod:`harness.cli_run`.

The operator CLI (``python -m ops``: dlq, trace, repair, smoke, cold-starts) is product and imports nothing
of the workshop; its ``local`` and ``capacity`` verbs forward here in a subprocess (:mod:`ops.workshop`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.cli_run import run_command
from harness.drill.drill import add_drill_parser, main_drill
from harness.stack.up import add_up_parser, main_up
from local_cloud.errors import LocalCloudError
from ops.arguments import integer as _integer
from ops.arguments import non_negative as _non_negative
from ops.arguments import positive as _positive
from ops.arguments import positive_float as _positive_float
from ops.arguments import rate as _rate
from ops.cli import OpsArgumentParser, one_line, operator_error

PROG = "python -m harness"


class WorkshopArgumentParser(OpsArgumentParser):
    """The operator CLI's parser (a mistake is one line, exit status 2), under the workshop's name."""

    root = PROG


def build_parser() -> argparse.ArgumentParser:
    parser = WorkshopArgumentParser(prog=PROG, description="The workshop: the order pipeline on this machine.")
    commands = parser.add_subparsers(dest="command", required=True)
    add_local_parser(commands)
    _add_capacity_parser(commands)
    add_drill_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; an operator mistake (the emulator's included) is one line on stderr and exit status 2."""
    try:
        args = build_parser().parse_args(argv)
        if args.command == "capacity":
            return _capacity(args)
        if args.command == "drill":
            return main_drill(args)
        return run_local_command(args, argv)
    except Exception as exc:
        message = str(exc) if isinstance(exc, LocalCloudError) else operator_error(exc)
        if message is None:
            raise  # a bug: keep the traceback
        print(f"{PROG}: error: {one_line(message)}", file=sys.stderr)
        return 2


def _add_capacity_parser(commands: Any) -> None:
    capacity = commands.add_parser("capacity", help="which quota binds first at a rate, from the synthesized template")
    capacity.add_argument("--rate", default="50000/min", help="offered rate (default 50000/min)")
    capacity.add_argument("--minutes", type=_positive_float, default=5.0, help="how long (default 5)")
    capacity.add_argument("--region-class", choices=("large", "other"), default="large", help="quota defaults")
    capacity.add_argument("--baseline", default="50/min", help="rate after the peak (default 50/min)")
    capacity.add_argument("--json", action="store_true", help="print JSON")
    capacity.add_argument("--assembly", type=Path, help="use this cdk.out instead of synthesizing")
    quota_argument(capacity)


def _capacity(args: argparse.Namespace) -> int:
    from harness.spike.capacity import format_capacity, predict_from_assembly
    from harness.spike.spike import parse_rate

    prediction = predict_from_assembly(
        parse_rate(args.rate), args.minutes, quotas(args), args.assembly, baseline=parse_rate(args.baseline)
    )
    print(json.dumps(prediction, indent=2) if args.json else format_capacity(prediction))
    return 0


def add_local_parser(commands: Any) -> None:
    """The ``local`` command and its subcommands, on the CLI's subparsers."""
    local = commands.add_parser("local", help="run the pipeline on this machine, against moto")
    local_commands = local.add_subparsers(dest="local_command", required=True)
    add_up_parser(local_commands)
    _add_faults_parser(local_commands)
    _add_run_parser(local_commands)
    _add_spike_parser(local_commands)


def _add_faults_parser(local_commands: Any) -> None:
    faults = local_commands.add_parser(
        "faults", help="the fault matrix: every fault at every Task state, one order per cell, judged from the records"
    )
    faults.add_argument("--state", help="only this row: a Task state, or repair (repair@<setup>)")
    faults.add_argument("--fault", help="only faults whose name contains this text, e.g. Lambda.Unknown")
    faults.add_argument("--persistence", choices=("once", "retries", "forever"), help="only this persistence")
    faults.add_argument("--json", action="store_true", help="print the cells as JSON instead of the matrix")
    faults.add_argument("--assembly", type=Path, help="use this cdk.out instead of synthesizing")


def _add_run_parser(local_commands: Any) -> None:
    run = local_commands.add_parser("run", help="synthesize, deploy into moto, push orders through, report")
    _add_run_mix_arguments(run)
    _add_run_fault_arguments(run)
    _add_run_control_arguments(run)


def _add_run_mix_arguments(run: argparse.ArgumentParser) -> None:
    """The order mix: how many orders, the seed, the business outcomes' shares."""
    run.add_argument("--orders", type=_positive, default=20, help="orders to submit (default 20)")
    run.add_argument("--seed", type=_integer, default=7, help="seed for the order mix (default 7)")
    run.add_argument("--decline-rate", type=_rate, default=0.15, help="share of orders whose payment is declined")
    run.add_argument("--ship-fail-rate", type=_rate, default=0.10, help="share of orders the carrier rejects")
    run.add_argument("--out-of-stock-rate", type=_rate, default=0.05, help="share of orders with an unstocked SKU")
    run.add_argument("--partial-capture-rate", type=_rate, default=0.0, help="share captured only in part")
    run.add_argument("--auth-only-rate", type=_rate, default=0.0, help="share authorised but never captured")
    run.add_argument("--refund-flaky-rate", type=_rate, default=0.0, help="share whose refund fails twice first")
    run.add_argument("--refund-fail-rate", type=_rate, default=0.0, help="share whose refund keeps failing")


def _add_run_fault_arguments(run: argparse.ArgumentParser) -> None:
    """The injected faults and incident families."""
    run.add_argument("--duplicate-rate", type=_rate, default=0.0, help="extra deliveries (same batch, later, late)")
    run.add_argument("--crash-rate", type=_rate, default=0.0, help="abrupt ends after the side effect")
    run.add_argument("--malformed-rate", type=_rate, default=0.0, help="extra malformed messages")
    run.add_argument(
        "--hostile-rate",
        type=_rate,
        default=0.0,
        help="per order, one extra hostile input: deep nesting, oversize, floats, wrong types, unknown order",
    )
    run.add_argument("--throttle-rate", type=_rate, default=0.0, help="DynamoDB and SQS calls answered with throttling")
    run.add_argument(
        "--ambiguous-rate", type=_rate, default=0.0, help="provider requests whose answer is lost after acting"
    )
    run.add_argument(
        "--status-write-fail-rate", type=_rate, default=0.0, help="saga status writes failing with a DynamoDB error"
    )
    run.add_argument(
        "--park-fail-rate", type=_rate, default=0.0, help="attempts of the park (MarkNeedsAttention) failing"
    )
    run.add_argument("--stop-rate", type=_rate, default=0.0, help="per Task state entered, StopExecution there")
    run.add_argument(
        "--incidents",
        type=_incidents,
        default=(),
        help="after the first drain, let the sweeper's threshold pass and inject these incident families at "
        "random simulated times from the seed: all, or some of provider_outage, sweeper_stopped, throttle_sfn, "
        "api_5xx separated by commas (a family twice: two incidents); each must page within a minute",
    )


def _add_run_control_arguments(run: argparse.ArgumentParser) -> None:
    """What the run does after the orders, what it checks and prints, how it is split and deployed."""
    run.add_argument("--replay-transient", action="store_true", help="then replay transient DLQ messages and drain")
    run.add_argument(
        "--repair-parked",
        action="store_true",
        help="then, as the needs-attention runbook says, redrive each parked order no compensation ran for "
        "(ops repair --action redrive) and drain; prints the valid orders lost before and after",
    )
    run.add_argument("--check", action="store_true", help="exit 1 if an invariant fails")
    run.add_argument(
        "--expect-no-pages",
        action="store_true",
        help="a run without incidents (business outcomes only): any page, explained or not, fails --check",
    )
    run.add_argument("--report-file", type=Path, help="also write the JSON report here")
    run.add_argument("--workers", type=_positive, default=1, help="split the orders across N processes (cores)")
    run.add_argument("--shard", type=_non_negative, default=0, help=argparse.SUPPRESS)
    run.add_argument("--shards", type=_positive, default=1, help=argparse.SUPPRESS)
    run.add_argument("--stage", choices=("dev",), default="dev", help="dev (prod's providers are real APIs)")
    run.add_argument("--assembly", type=Path, help="use this cdk.out instead of synthesizing")
    quota_argument(run)
    run.add_argument(
        "--timeout",
        type=_positive_float,
        default=300.0,
        help="give up when the pipeline makes no progress (no message delivered, no function invoked) this long (s)",
    )
    run.add_argument("--json", action="store_true", help="print the JSON report")
    run.add_argument("--echo-logs", action="store_true", help="copy handler log lines to stderr")
    run.add_argument(
        "--via",
        choices=("sqs", "api"),
        default="sqs",
        help="how orders are sent: SendMessage to the queue (default), or POST /orders to the order API "
        "(the template's REST API served on 127.0.0.1, SigV4, an Idempotency-Key per order)",
    )


def _add_spike_parser(local_commands: Any) -> None:
    spike = local_commands.add_parser(
        "spike", help="a traffic spike at scale 1:k against AWS's quotas (similitude): backlog, latency, DLQ"
    )
    spike.add_argument("--baseline", default="50/min", help="rate before and after the peak (default 50/min)")
    spike.add_argument("--peak", default="50000/min", help="peak rate (default 50000/min)")
    spike.add_argument("--minutes", type=_positive_float, default=5.0, help="peak duration (default 5)")
    spike.add_argument("--scale", type=_positive_float, default=100.0, help="k: rates and quotas divided by k (100)")
    spike.add_argument("--region-class", choices=("large", "other"), default="large", help="quota defaults")
    spike.add_argument("--today", action="store_true", help="without intake's throttle backoff (today's behaviour)")
    spike.add_argument("--plot", type=Path, default=None, help="plot file (default reports/spike.png)")
    spike.add_argument("--no-plot", action="store_true", help="do not write the plot")
    spike.add_argument("--json", action="store_true", help="print the JSON report")
    spike.add_argument("--check", action="store_true", help="exit 1 unless every order is terminal, none dead-lettered")
    spike.add_argument("--assembly", type=Path, help="use this cdk.out instead of synthesizing")
    quota_argument(spike)


def _incidents(value: str) -> tuple[str, ...]:
    from harness.run.incidents import parse_incidents

    try:
        return parse_incidents(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def quota_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--quota",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override one AWS quota at 1:1 (names: local_cloud.limits.QUOTA_NAMES), e.g. sfn_start_refill=600",
    )


def quotas(args: argparse.Namespace) -> Any:
    from local_cloud.limits import Quotas, parse_quotas

    return Quotas.for_region_class(getattr(args, "region_class", "large")).with_overrides(parse_quotas(args.quota))


def _spike(args: argparse.Namespace) -> int:
    from harness.spike.spike import DEFAULT_PLOT, SpikeOptions, parse_rate, run_spike

    options = SpikeOptions(
        baseline_per_second=parse_rate(args.baseline),
        peak_per_second=parse_rate(args.peak),
        minutes=args.minutes,
        scale=args.scale,
        quotas=quotas(args),
        throttle_backoff=not args.today,
        assembly_dir=args.assembly,
        plot=None if args.no_plot else (args.plot or DEFAULT_PLOT),
    )
    report = run_spike(options)
    if args.json:
        print(json.dumps({k: v for k, v in report.items() if k != "series"}, indent=2, default=str))
    else:
        backlog, latency = report["backlog"], report["latency_seconds"]
        print(
            f"spike 1:{options.scale:g}: {report['orders']['submitted']} orders, "
            f"{report['valid_orders_dead_lettered']} valid dead-lettered, throttles {report['throttles']}, "
            f"max depth {backlog['max_depth']}, drained {backlog['drained_after_seconds']} s after the peak, "
            f"latency p50 {latency['p50']} s p99 {latency['p99']} s"
        )
    from harness.reporting.lost_sales import lost_sales_line

    # Beside the JSON (stdout is the report file): lost sales, and what --check refuses.
    print(lost_sales_line(report["lost_sales"]), file=sys.stderr if args.json else sys.stdout)
    for problem in report["check_problems"]:
        print(f"FAIL {problem}", file=sys.stderr)
    return 1 if args.check and report["check_problems"] else 0


def run_local_command(args: argparse.Namespace, argv: Sequence[str] | None) -> int:
    """Run a parsed ``local`` command; the exit status."""
    if args.local_command == "run":
        return run_command(args, argv, quotas(args))
    if args.local_command == "faults":
        from harness.matrix.fault_matrix import MatrixOptions
        from harness.matrix.fault_matrix import main as main_faults

        matrix = MatrixOptions(
            state=args.state, fault=args.fault, persistence=args.persistence, assembly_dir=args.assembly
        )
        return main_faults(matrix, args.json)
    if args.local_command == "up":
        return main_up(args)
    if args.local_command == "spike":
        return _spike(args)
    return 2
