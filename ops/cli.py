"""``python -m ops``: the operator CLI."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import botocore.exceptions

from ops.arguments import integer as _integer
from ops.arguments import non_negative as _non_negative
from ops.arguments import non_negative_float as _non_negative_float
from ops.arguments import positive as _positive
from ops.arguments import positive_float as _positive_float
from ops.arguments import rate as _rate
from ops.dlq import QUEUES
from ops.errors import OpsError, UsageError
from ops.local.up import add_up_parser, main_up

PROG = "python -m ops"
#: ``--category`` of ``dlq replay``: the failure categories, DLQ messages without one, or all.
REPLAY_CATEGORIES = ("transient", "permanent", "unknown", "unclassified", "all")
#: AWS error codes that mean "these credentials are not accepted" (an operator fix, not a bug).
CREDENTIAL_ERROR_CODES = frozenset(
    {
        "ExpiredToken",
        "ExpiredTokenException",
        "InvalidClientTokenId",
        "UnrecognizedClientException",
        "SignatureDoesNotMatch",
        "AccessDenied",
        "AccessDeniedException",
    }
)


class OpsArgumentParser(argparse.ArgumentParser):
    """argparse, but a mistake is one line on stderr (no usage block) and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{PROG}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OpsArgumentParser(prog=PROG, description="Operate the order pipeline.")
    commands = parser.add_subparsers(dest="command", required=True)
    local = commands.add_parser("local", help="run the pipeline on this machine, against moto")
    local_commands = local.add_subparsers(dest="local_command", required=True)
    add_up_parser(local_commands)
    faults = local_commands.add_parser(
        "faults", help="the fault matrix: every fault at every Task state, one order per cell, judged from the records"
    )
    faults.add_argument("--state", help="only this row: a Task state, or repair (repair@<setup>)")
    faults.add_argument("--fault", help="only faults whose name contains this text, e.g. Lambda.Unknown")
    faults.add_argument("--persistence", choices=("once", "retries", "forever"), help="only this persistence")
    faults.add_argument("--json", action="store_true", help="print the cells as JSON instead of the matrix")
    faults.add_argument("--assembly", type=Path, help="use this cdk.out instead of synthesizing")
    run = local_commands.add_parser("run", help="synthesize, deploy into moto, push orders through, report")
    run.add_argument("--orders", type=_positive, default=20, help="orders to submit (default 20)")
    run.add_argument("--seed", type=_integer, default=7, help="seed for the order mix (default 7)")
    run.add_argument("--decline-rate", type=_rate, default=0.15, help="share of orders whose payment is declined")
    run.add_argument("--ship-fail-rate", type=_rate, default=0.10, help="share of orders the carrier rejects")
    run.add_argument("--out-of-stock-rate", type=_rate, default=0.05, help="share of orders with an unstocked SKU")
    run.add_argument("--partial-capture-rate", type=_rate, default=0.0, help="share captured only in part")
    run.add_argument("--auth-only-rate", type=_rate, default=0.0, help="share authorised but never captured")
    run.add_argument("--refund-flaky-rate", type=_rate, default=0.0, help="share whose refund fails twice first")
    run.add_argument("--refund-fail-rate", type=_rate, default=0.0, help="share whose refund keeps failing")
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
    run.add_argument("--replay-transient", action="store_true", help="then replay transient DLQ messages and drain")
    run.add_argument("--check", action="store_true", help="exit 1 if an invariant fails")
    run.add_argument("--report-file", type=Path, help="also write the JSON report here")
    run.add_argument("--workers", type=_positive, default=1, help="split the orders across N processes (cores)")
    run.add_argument("--shard", type=_non_negative, default=0, help=argparse.SUPPRESS)
    run.add_argument("--shards", type=_positive, default=1, help=argparse.SUPPRESS)
    run.add_argument("--stage", choices=("dev",), default="dev", help="dev (prod's providers are real APIs)")
    run.add_argument("--assembly", type=Path, help="use this cdk.out instead of synthesizing")
    _quota_argument(run)
    run.add_argument("--timeout", type=_positive_float, default=300.0, help="give up after this many seconds")
    run.add_argument("--json", action="store_true", help="print the JSON report")
    run.add_argument("--echo-logs", action="store_true", help="copy handler log lines to stderr")
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
    _quota_argument(spike)
    capacity = commands.add_parser("capacity", help="which quota binds first at a rate, from the synthesized template")
    capacity.add_argument("--rate", default="50000/min", help="offered rate (default 50000/min)")
    capacity.add_argument("--minutes", type=_positive_float, default=5.0, help="how long (default 5)")
    capacity.add_argument("--region-class", choices=("large", "other"), default="large", help="quota defaults")
    capacity.add_argument("--baseline", default="50/min", help="rate after the peak (default 50/min)")
    capacity.add_argument("--json", action="store_true", help="print JSON")
    capacity.add_argument("--assembly", type=Path, help="use this cdk.out instead of synthesizing")
    _quota_argument(capacity)
    dlq = commands.add_parser("dlq", help="dead-letter queues: list by category, replay")
    dlq_commands = dlq.add_subparsers(dest="dlq_command", required=True)
    dlq_list = dlq_commands.add_parser("list", help="per queue and category: count and oldest message age")
    _target_arguments(dlq_list)
    dlq_list.add_argument("--json", action="store_true")
    dlq_replay = dlq_commands.add_parser("replay", help="move DLQ messages back to their source queue")
    dlq_replay.add_argument("--queue", required=True, choices=sorted(QUEUES), help="orders | needs-attention")
    dlq_replay.add_argument(
        "--category",
        default="transient",
        choices=REPLAY_CATEGORIES,
        help="transient (default), permanent (needs --force), unknown (unexpected errors, probably bugs: "
        "replay after the fix), unclassified (no failure record), or all",
    )
    dlq_replay.add_argument("--dry-run", action="store_true", help="show what would be replayed, change nothing")
    dlq_replay.add_argument("--max", type=_positive, help="replay at most N messages")
    dlq_replay.add_argument("--rate", type=_positive_float, help="messages per second")
    dlq_replay.add_argument("--force", action="store_true", help="also replay permanent failures")
    _target_arguments(dlq_replay)

    trace = commands.add_parser("trace", help="an order's timeline by correlation ID")
    trace.add_argument("correlation_id")
    trace.add_argument("--json", action="store_true")
    _target_arguments(trace)

    repair = commands.add_parser(
        "repair",
        help="move a stuck or needs-attention order to a terminal state (an unsafe action is refused: exit 2)",
    )
    repair.add_argument("order_id")
    repair.add_argument(
        "--action",
        choices=("redrive", "compensate"),
        default="redrive",
        help="redrive: rerun the saga (only if no compensation ran for the attempt); compensate: cancel the "
        "shipment, refund, release (any non-terminal status, NEEDS_ATTENTION included)",
    )
    _target_arguments(repair)

    smoke = commands.add_parser("smoke", help="after a deploy: a small order mix end to end, checked, cleaned up")
    smoke.add_argument("--timeout", type=_positive_float, default=180.0, help="wait for terminal states (s, 180)")
    smoke.add_argument("--alarm-wait", type=_non_negative_float, default=180.0, help="wait for alarms to clear (s)")
    smoke.add_argument("--payment-token", help="a token the provider captures (real providers: a test-mode token)")
    smoke.add_argument("--decline-token", help="a token the provider declines (real providers: a test-mode token)")
    smoke.add_argument("--undeliverable-country", help="a country the carrier refuses (real carriers: test mode)")
    smoke.add_argument("--json", action="store_true", help="print the checks as JSON")
    _target_arguments(smoke)
    return parser


def _quota_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--quota",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override one AWS quota at 1:1 (names: ops/local/limits.py), e.g. sfn_start_refill=600",
    )


def _quotas(args: argparse.Namespace) -> Any:
    from ops.local.limits import Quotas, parse_quotas

    return Quotas.for_region_class(getattr(args, "region_class", "large")).with_overrides(parse_quotas(args.quota))


def _spike(args: argparse.Namespace) -> int:
    from ops.local.spike import DEFAULT_PLOT, SpikeOptions, parse_rate, run_spike

    options = SpikeOptions(
        baseline_per_second=parse_rate(args.baseline),
        peak_per_second=parse_rate(args.peak),
        minutes=args.minutes,
        scale=args.scale,
        quotas=_quotas(args),
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
    for problem in report["check_problems"]:
        print(f"FAIL {problem}", file=sys.stderr)
    return 1 if args.check and report["check_problems"] else 0


def _capacity(args: argparse.Namespace) -> int:
    from ops.capacity import format_capacity, predict_from_assembly
    from ops.local.spike import parse_rate

    prediction = predict_from_assembly(
        parse_rate(args.rate), args.minutes, _quotas(args), args.assembly, baseline=parse_rate(args.baseline)
    )
    print(json.dumps(prediction, indent=2) if args.json else format_capacity(prediction))
    return 0


def _smoke(target: Any, args: argparse.Namespace) -> int:
    from ops.smoke import SmokeOptions, context_defaults, format_table, run_smoke

    context = context_defaults()
    options = SmokeOptions(
        timeout_seconds=args.timeout,
        alarm_wait_seconds=args.alarm_wait,
        payment_token=args.payment_token or context.get("payment_token"),
        decline_token=args.decline_token or context.get("decline_token"),
        undeliverable_country=args.undeliverable_country or context.get("undeliverable_country"),
    )
    report = run_smoke(target, options)
    if args.json:
        checks = [{"check": c.name, "expected": c.expected, "observed": c.observed, "ok": c.ok} for c in report.checks]
        print(json.dumps({"run_id": report.run_id, "passed": report.passed, "checks": checks, "notes": report.notes}))
    else:
        print(format_table(report))
    return 0 if report.passed else 1


def _target_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stack", default="OrderPipeline-dev", help="deployed stack name (outputs name the resources)")
    parser.add_argument("--region", help="AWS region (default: your configuration)")
    parser.add_argument("--profile", help="AWS profile (default: your configuration)")
    parser.add_argument("--endpoint-url", help="API endpoint, e.g. a local moto server on 127.0.0.1")


def _without(args: list[str], options_with_values: tuple[str, ...]) -> list[str]:
    """Drop the given options (and their values, if any) from an argument list."""
    flags = {"--json", "--check"}
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in options_with_values:
            skip = name not in flags and "=" not in arg
            continue
        out.append(arg)
    return out


def _print_summary(report: dict[str, Any]) -> None:
    o = report["orders"]
    print(f"{'order':<22} {'status':<16} correlation id")
    for detail in report["order_details"]:
        print(f"{detail['order_id']:<22} {detail['status']:<16} {detail['correlation_id']}")
    print()
    print(
        f"orders: {o['submitted']} submitted, {o['completed']} completed, {o['compensated']} compensated, "
        f"{o['needs_attention']} needs attention, {o['failed']} failed, {o['in_flight']} in flight"
    )
    ledger = report["ledger"]
    print(
        f"sandbox ledger: {ledger['charges']} charges, {ledger['refunds']} refunds, {ledger['shipments']} shipments, "
        f"{ledger['duplicate_charges']} duplicate charges, "
        f"{ledger['reservations_outstanding']} reservations outstanding"
    )
    print(f"DLQs: {report['dlq']}   alarms in ALARM: {report['alarms_in_alarm'] or 'none'}")
    logs = report["logs"]
    print(f"log lines: {logs['lines']}, without correlation id: {logs['without_correlation_id']}")
    for kind, ended in (report.get("hostile") or {}).items():
        where = ", ".join(f"{k} {v}" for k, v in ended.items() if k != "injected")
        print(f"hostile {kind}: {ended['injected']} injected ({where})")
    if "cost" in report:
        units, usd = report["cost"]["per_order"], report["cost"]["usd_per_million_orders"]
        print(
            f"per order: {units['lambda_invocations']} Lambda invocations, {units['dynamodb_wru']} DynamoDB WRU, "
            f"{units['dynamodb_rru']} RRU, {units['sqs_requests']} SQS requests, "
            f"{units['state_transitions']} state transitions"
        )
        x86 = usd["x86_64_for_comparison"]
        print(
            f"USD per million orders (list prices of {usd['prices_as_of']}, Lambda on {usd['lambda_architecture']}): "
            f"Standard workflow {usd['standard_workflow']}, Express workflow {usd['express_workflow']} "
            f"(x86_64: {x86['standard_workflow']} / {x86['express_workflow']}, arm64 saves {x86['arm64_saves']}) "
            "- Express would lose: " + "; ".join(usd["express_trade_offs"])
        )
    e = report["elapsed"]
    print(f"elapsed: {e['wall_seconds']} s wall, {e['simulated_seconds']} s simulated")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def operator_error(exc: BaseException) -> str | None:
    """The one-line message for an operator mistake, or None if ``exc`` is not one (a bug)."""
    if isinstance(exc, OpsError):
        return str(exc)
    if isinstance(exc, (botocore.exceptions.NoCredentialsError, botocore.exceptions.PartialCredentialsError)):
        return (
            "no usable AWS credentials: configure them or pass --profile "
            "(for a local endpoint, pass --endpoint-url http://127.0.0.1:4566)"
        )
    if isinstance(exc, botocore.exceptions.NoRegionError):
        return "no AWS region: pass --region or configure a default region"
    if isinstance(exc, botocore.exceptions.ProfileNotFound):
        return f"{exc}; check --profile"
    if isinstance(exc, (botocore.exceptions.EndpointConnectionError, botocore.exceptions.ConnectTimeoutError)):
        endpoint = exc.kwargs.get("endpoint_url", "the endpoint")
        return (
            f"cannot connect to {endpoint}: check --endpoint-url (a local endpoint: python -m ops local up) "
            "or your network"
        )
    if isinstance(exc, botocore.exceptions.ClientError):
        error = exc.response.get("Error", {})
        if error.get("Code") in CREDENTIAL_ERROR_CODES:
            return f"AWS refused the request ({error.get('Code')}: {error.get('Message')}); check --profile"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; an operator mistake is one line on stderr and exit status 2."""
    try:
        return _run(build_parser().parse_args(argv), argv)
    except Exception as exc:
        message = operator_error(exc)
        if message is None:
            raise  # a bug: keep the traceback
        print(f"{PROG}: error: {_one_line(message)}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace, argv: Sequence[str] | None) -> int:
    if args.command == "local" and args.local_command == "run":
        from ops.local.chaos import FaultRates
        from ops.local.orders import OrderMix
        from ops.local.run import RunOptions, run_local

        options = RunOptions(
            orders=args.orders,
            seed=args.seed,
            mix=OrderMix(
                decline_rate=args.decline_rate,
                ship_fail_rate=args.ship_fail_rate,
                out_of_stock_rate=args.out_of_stock_rate,
                partial_capture_rate=args.partial_capture_rate,
                auth_only_rate=args.auth_only_rate,
                refund_flaky_rate=args.refund_flaky_rate,
                refund_fail_rate=args.refund_fail_rate,
            ),
            faults=FaultRates(
                duplicate=args.duplicate_rate,
                crash=args.crash_rate,
                malformed=args.malformed_rate,
                throttle=args.throttle_rate,
                hostile=args.hostile_rate,
                ambiguous=args.ambiguous_rate,
                status_write_fail=args.status_write_fail_rate,
                park_fail=args.park_fail_rate,
                stop=args.stop_rate,
            ),
            replay_transient=args.replay_transient,
            stage=args.stage,
            timeout_seconds=args.timeout,
            assembly_dir=args.assembly,
            echo_logs=args.echo_logs,
            quotas=_quotas(args),
        )
        if args.workers > 1:
            from ops.local.shards import run_sharded

            passthrough = [a for a in (argv if argv is not None else sys.argv[1:])[2:]]
            passthrough = _without(passthrough, ("--workers", "--assembly", "--report-file", "--json", "--check"))
            report = run_sharded(options, passthrough, args.workers)
        else:
            from ops.local.shards import shard_options

            report = run_local(shard_options(options, args.shard, args.shards))
        if args.report_file:
            args.report_file.write_text(json.dumps(report, indent=2, default=str) + "\n")
        if args.json:
            json.dump(report, sys.stdout, indent=2, default=str)
            print()
        else:
            _print_summary(report)
        failed = {k: v for k, v in report["invariants"].items() if v}
        if args.check:
            for name, why in report["invariants"].items():
                print(f"{'FAIL' if why else 'ok  '} {name}{': ' + why if why else ''}", file=sys.stderr)
        return 1 if args.check and failed else 0
    if args.command == "local" and args.local_command == "faults":
        from ops.local.fault_matrix import MatrixOptions
        from ops.local.fault_matrix import main as main_faults

        matrix = MatrixOptions(
            state=args.state, fault=args.fault, persistence=args.persistence, assembly_dir=args.assembly
        )
        return main_faults(matrix, args.json)
    if args.command == "local" and args.local_command == "up":
        return main_up(args)
    if args.command == "local" and args.local_command == "spike":
        return _spike(args)
    if args.command == "capacity":
        return _capacity(args)
    from ops.target import Target

    if args.command == "dlq" and args.dlq_command == "replay":
        from ops.dlq import check_replay_request

        check_replay_request(args.queue, args.category, force=args.force, dry_run=args.dry_run)
    if args.command == "trace" and not args.correlation_id.strip():
        raise UsageError("a correlation ID is required")
    target = Target.from_stack(args.stack, region=args.region, profile=args.profile, endpoint_url=args.endpoint_url)
    if args.command == "smoke":
        return _smoke(target, args)
    if args.command == "repair":
        from ops.repair import repair

        # An unsafe or pointless repair raises RepairRefused (an OpsError): one line on stderr, exit 2.
        print(json.dumps(repair(target, args.order_id, args.action), indent=2))
        return 0
    if args.command == "dlq":
        from ops.dlq import format_list, list_queues, replay_queue

        if args.dlq_command == "list":
            summary = list_queues(target)
            print(json.dumps(summary, indent=2) if args.json else format_list(summary))
            return 0
        report = replay_queue(
            target,
            args.queue,
            category=None if args.category == "all" else args.category,
            dry_run=args.dry_run,
            max_messages=args.max,
            rate=args.rate,
            force=args.force,
        )
        print(json.dumps(report, indent=2))
        return 0
    if args.command == "trace":
        from ops.trace import as_json, trace

        events = trace(target, args.correlation_id)
        if args.json:
            print(json.dumps(as_json(events), indent=2))
        else:
            print("\n".join(e.line() for e in events) or f"nothing found for {args.correlation_id}")
        return 0
    return 2
