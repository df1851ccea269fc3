"""``python -m ops``: the operator CLI."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import botocore.exceptions

from harness.cli import add_local_parser, quota_argument, quotas, run_local_command
from local_cloud.errors import LocalCloudError
from ops.arguments import non_negative_float as _non_negative_float
from ops.arguments import positive as _positive
from ops.arguments import positive_float as _positive_float
from ops.dlq import QUEUES
from ops.errors import OpsError, UsageError
from ops.resolve import add_parser as add_resolve_parser
from ops.resolve import run as resolve_command

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
    add_local_parser(commands)
    _add_capacity_parser(commands)
    _add_dlq_parser(commands)

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
    repair.add_argument("--reason", help="why (kept in the order's history with who and when; no customer data)")
    _target_arguments(repair)
    add_resolve_parser(commands, _target_arguments)

    _add_smoke_parser(commands)

    cold = commands.add_parser("cold-starts", help="after a deploy: Init Duration from the functions' REPORT records")
    cold.add_argument("--minutes", type=_positive_float, default=60.0, help="look back this long (min, 60)")
    cold.add_argument("--json", action="store_true", help="print the figures as JSON")
    _target_arguments(cold)
    return parser


def _add_capacity_parser(commands: Any) -> None:
    capacity = commands.add_parser("capacity", help="which quota binds first at a rate, from the synthesized template")
    capacity.add_argument("--rate", default="50000/min", help="offered rate (default 50000/min)")
    capacity.add_argument("--minutes", type=_positive_float, default=5.0, help="how long (default 5)")
    capacity.add_argument("--region-class", choices=("large", "other"), default="large", help="quota defaults")
    capacity.add_argument("--baseline", default="50/min", help="rate after the peak (default 50/min)")
    capacity.add_argument("--json", action="store_true", help="print JSON")
    capacity.add_argument("--assembly", type=Path, help="use this cdk.out instead of synthesizing")
    quota_argument(capacity)


def _add_dlq_parser(commands: Any) -> None:
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


def _add_smoke_parser(commands: Any) -> None:
    smoke = commands.add_parser("smoke", help="after a deploy: a small order mix end to end, checked, cleaned up")
    smoke.add_argument("--timeout", type=_positive_float, default=180.0, help="wait for terminal states (s, 180)")
    smoke.add_argument("--alarm-wait", type=_non_negative_float, default=180.0, help="wait for alarms to clear (s)")
    smoke.add_argument(
        "--no-page-path",
        action="store_true",
        help="skip the page-path check (forcing an alarm and receiving its notification)",
    )
    smoke.add_argument("--payment-token", help="a token the provider captures (real providers: a test-mode token)")
    smoke.add_argument("--decline-token", help="a token the provider declines (real providers: a test-mode token)")
    smoke.add_argument("--undeliverable-country", help="a country the carrier refuses (real carriers: test mode)")
    smoke.add_argument(
        "--no-api", action="store_true", help="send every order through SQS, not the order API (noted in the report)"
    )
    smoke.add_argument(
        "--dead-letter",
        action="store_true",
        help="without the order API, also send a malformed order to the queue and check it is dead-lettered as "
        "permanent: it pages through the orders DLQ alarm wherever alarms are evaluated (for make rehearse)",
    )
    smoke.add_argument("--json", action="store_true", help="print the checks as JSON")
    _target_arguments(smoke)


def _capacity(args: argparse.Namespace) -> int:
    from harness.spike import parse_rate
    from ops.capacity import format_capacity, predict_from_assembly

    prediction = predict_from_assembly(
        parse_rate(args.rate), args.minutes, quotas(args), args.assembly, baseline=parse_rate(args.baseline)
    )
    print(json.dumps(prediction, indent=2) if args.json else format_capacity(prediction))
    return 0


def _smoke(target: Any, args: argparse.Namespace) -> int:
    from ops.smoke import SmokeOptions, context_defaults, format_table, run_smoke

    context = context_defaults()
    options = SmokeOptions(
        timeout_seconds=args.timeout,
        alarm_wait_seconds=args.alarm_wait,
        page_path=not args.no_page_path,
        payment_token=args.payment_token or context.get("payment_token"),
        decline_token=args.decline_token or context.get("decline_token"),
        undeliverable_country=args.undeliverable_country or context.get("undeliverable_country"),
        use_api=not args.no_api,
        dead_letter=args.dead_letter,
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


def _one_line(text: str) -> str:
    return " ".join(text.split())


def operator_error(exc: BaseException) -> str | None:
    """The one-line message for an operator mistake, or None if ``exc`` is not one (a bug)."""
    if isinstance(exc, (OpsError, LocalCloudError)):  # the emulator's own: a quota name or value
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
    if args.command == "local":
        return run_local_command(args, argv)
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
    if args.command == "cold-starts":
        from ops.cold_starts import cold_starts, format_cold_starts

        figures = cold_starts(target, args.stack, args.minutes)
        print(json.dumps(figures, indent=2) if args.json else format_cold_starts(figures))
        return 0
    if args.command == "repair":
        from ops.repair import repair

        # An unsafe or pointless repair raises RepairRefused (an OpsError): one line on stderr, exit 2.
        print(json.dumps(repair(target, args.order_id, args.action, reason=args.reason), indent=2))
        return 0
    if args.command == "resolve":
        return resolve_command(target, args)
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
