"""``python -m ops``: the operator CLI (product: it imports nothing of the workshop, tests/test_ops_imports.py).

``local`` and ``capacity`` need the emulator: they run in the workshop's entry point, ``python -m harness``,
to which :mod:`ops.workshop` forwards them in a subprocess.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import botocore.exceptions

from lambda_resilience.receive import MAX_WAIT_SECONDS
from ops.arguments import non_negative_float as _non_negative_float
from ops.arguments import positive as _positive
from ops.arguments import positive_float as _positive_float
from ops.dlq import QUEUES
from ops.errors import OpsError, UsageError
from ops.resolve import add_parser as add_resolve_parser
from ops.resolve import run as resolve_command
from ops.workshop import FORWARDED, forward

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

    root = PROG

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.root}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OpsArgumentParser(prog=PROG, description="Operate the order pipeline.")
    commands = parser.add_subparsers(dest="command", required=True)
    _add_forwarded_parsers(commands)
    _add_dlq_parser(commands)

    order = commands.add_parser(
        "order", help="one order by ID: status, attempts, timeline, correlation IDs, executions (no customer data)"
    )
    order.add_argument("order_id")
    order.add_argument("--json", action="store_true")
    _target_arguments(order)

    orders = commands.add_parser(
        "orders", help="orders by status through the by-status index, oldest first: NEEDS_ATTENTION, stuck, ..."
    )
    orders.add_argument("--status", required=True, help="an order status (e.g. NEEDS_ATTENTION), or stuck")
    orders.add_argument("--max", type=_positive, default=50, help="at most N orders (default 50)")
    orders.add_argument("--older-than", type=_duration, help="not updated for this long (stuck: the saga timeout)")
    orders.add_argument("--json", action="store_true")
    _target_arguments(orders)

    trace = commands.add_parser("trace", help="an order's timeline by correlation ID or order ID")
    trace.add_argument("correlation_id", metavar="correlation-id|order-id")
    trace.add_argument(
        "--since",
        type=_duration,
        default=24 * 3600.0,
        help="read log lines this far back: 90m, 24h, 7d (default 24h; one Logs Insights query over the window)",
    )
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
    _add_pager_parser(commands)
    cold = commands.add_parser("cold-starts", help="after a deploy: Init Duration from the functions' REPORT records")
    cold.add_argument("--minutes", type=_positive_float, default=60.0, help="look back this long (min, 60)")
    cold.add_argument("--json", action="store_true", help="print the figures as JSON")
    _target_arguments(cold)
    return parser


def _add_pager_parser(commands: Any) -> None:
    """``pager check``: does a page reach a person?"""
    pager = commands.add_parser("pager", help="the alarm topics' subscriptions: does a page reach a person?")
    pager_commands = pager.add_subparsers(dest="pager_command", required=True)
    pager_check = pager_commands.add_parser(
        "check", help="fail (exit 1) when the page or ticket topic has no confirmed subscription; how to confirm"
    )
    pager_check.add_argument("--json", action="store_true")
    _target_arguments(pager_check)


def _add_forwarded_parsers(commands: Any) -> None:
    """``local`` and ``capacity``, listed in ``--help``; :func:`main` forwards them before parsing."""
    for verb, text in (
        ("local", "the pipeline on this machine, against moto (forwarded to the workshop: python -m harness local)"),
        ("capacity", "which quota binds first at a rate (forwarded to the workshop: python -m harness capacity)"),
    ):
        commands.add_parser(verb, help=text, add_help=False).add_argument("args", nargs=argparse.REMAINDER)


def _add_dlq_parser(commands: Any) -> None:
    dlq = commands.add_parser("dlq", help="dead-letter queues: list by category, replay, automatic replays' record")
    dlq_commands = dlq.add_subparsers(dest="dlq_command", required=True)
    dlq_list = dlq_commands.add_parser("list", help="per queue and category: count and oldest message age")
    _target_arguments(dlq_list)
    dlq_list.add_argument("--json", action="store_true")
    _wait_argument(dlq_list)
    dlq_history = dlq_commands.add_parser(
        "history", help="what the automatic replay moved: per message, order, attempt, category, correlation ID"
    )
    dlq_history.add_argument("--hours", type=_positive_float, default=24.0, help="look back this long (h, 24)")
    dlq_history.add_argument("--json", action="store_true")
    _target_arguments(dlq_history)
    dlq_replay = dlq_commands.add_parser("replay", help="move DLQ messages back to their source queue")
    dlq_replay.add_argument("--queue", required=True, choices=sorted(QUEUES), help="orders | needs-attention")
    dlq_replay.add_argument(
        "--category",
        default="transient",
        choices=REPLAY_CATEGORIES,
        help="transient (default), permanent (needs --force), unknown (unexpected errors, probably bugs: "
        "replay after the fix), unclassified (no failure record), or all",
    )
    dlq_replay.add_argument(
        "--dry-run",
        action="store_true",
        help="show what would be replayed (order, attempt, correlation ID, category per message), change nothing",
    )
    dlq_replay.add_argument("--max", type=_positive, help="replay at most N messages")
    dlq_replay.add_argument("--rate", type=_positive_float, help="messages per second")
    dlq_replay.add_argument("--force", action="store_true", help="also replay permanent failures")
    _wait_argument(dlq_replay)
    _target_arguments(dlq_replay)
    from ops.dlq_discard import add_parser as add_discard_parser

    add_discard_parser(dlq_commands, _target_arguments, _wait_argument)


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _duration(text: str) -> float:
    """``90m``, ``24h``, ``7d`` (or seconds) -> seconds."""
    number, unit = (text[:-1], text[-1]) if text[-1:] in _UNITS else (text, "s")
    return _positive_float(number) * _UNITS[unit]


def _wait_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--wait-seconds",
        type=_wait_seconds,
        help="each receive's long poll, 1..20 s (default 1; a DLQ is read to its end on repeated empty receives "
        "and its own counts)",
    )


def _wait_seconds(text: str) -> int:
    value = _positive(text)
    if value > MAX_WAIT_SECONDS:
        raise argparse.ArgumentTypeError(f"must be <= {MAX_WAIT_SECONDS} (SQS's longest wait), got {value}")
    return value


def _add_smoke_parser(commands: Any) -> None:
    smoke = commands.add_parser("smoke", help="after a deploy: a small order mix end to end, checked, cleaned up")
    smoke.add_argument("--timeout", type=_positive_float, default=180.0, help="wait for terminal states (s, 180)")
    smoke.add_argument("--alarm-wait", type=_non_negative_float, default=180.0, help="wait for alarms to clear (s)")
    smoke.add_argument(
        "--no-page-path",
        action="store_true",
        help="skip the page-path checks (each alarm topic has a confirmed subscription; a forced alarm's "
        "notification is received)",
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


def one_line(text: str) -> str:
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


def main(argv: Sequence[str] | None = None, *, target: Any = None) -> int:
    """Run one command; an operator mistake is one line on stderr and exit status 2.

    ``target``: an :class:`~ops.target.Target` already read (a script running several commands on one stack,
    such as an on-call drill counting their calls); by default the command reads ``--stack``'s outputs."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args and args[0] in FORWARDED:
            return forward(args)
        return _run(build_parser().parse_args(args), target)
    except Exception as exc:
        message = operator_error(exc)
        if message is None:
            raise  # a bug: keep the traceback
        print(f"{PROG}: error: {one_line(message)}", file=sys.stderr)
        return 2


def _check_dlq_request(args: argparse.Namespace) -> None:
    """Refuse a DLQ replay or discard that is a mistake, before any AWS call."""
    if args.command == "dlq" and args.dlq_command == "replay":
        from ops.dlq import check_replay_request

        check_replay_request(args.queue, args.category, force=args.force, dry_run=args.dry_run)
    if args.command == "dlq" and args.dlq_command == "discard":
        from ops.dlq_discard import check_discard_request

        check_discard_request(args.queue, args.reason)


def _run(args: argparse.Namespace, given: Any = None) -> int:
    from ops.target import Target

    _check_dlq_request(args)
    if args.command == "trace" and not args.correlation_id.strip():
        raise UsageError("a correlation ID is required")
    target = given or Target.from_stack(
        args.stack, region=args.region, profile=args.profile, endpoint_url=args.endpoint_url
    )
    if args.command == "smoke":
        return _smoke(target, args)
    if args.command == "pager":
        from ops.pager_check import check_topics, format_checks

        checks = check_topics(target)
        passed = all(c.ok for c in checks)
        topics = [c.as_json() for c in checks]
        print(json.dumps({"passed": passed, "topics": topics}, indent=2) if args.json else format_checks(checks))
        return 0 if passed else 1
    if args.command == "cold-starts":
        from ops.cold_starts import cold_starts, format_cold_starts

        figures = cold_starts(target, args.stack, args.minutes)
        print(json.dumps(figures, indent=2) if args.json else format_cold_starts(figures))
        return 0
    if args.command == "order":
        from ops.order_view import format_order, order_view

        view = order_view(target, args.order_id)
        print(json.dumps(view, indent=2) if args.json else format_order(view))
        return 0
    if args.command == "orders":
        from ops.orders_list import format_orders, orders_by_status

        found = orders_by_status(target, args.status, max_items=args.max, older_than_seconds=args.older_than)
        print(json.dumps(found, indent=2) if args.json else format_orders(found))
        return 0
    if args.command == "repair":
        from ops.repair import repair

        # An unsafe or pointless repair raises RepairRefused (an OpsError): one line on stderr, exit 2.
        print(json.dumps(repair(target, args.order_id, args.action, reason=args.reason), indent=2))
        return 0
    if args.command == "resolve":
        return resolve_command(target, args)
    if args.command == "dlq":
        return _dlq(target, args)
    if args.command == "trace":
        from ops.trace import as_json, trace

        events = trace(target, args.correlation_id, since_seconds=args.since)
        if args.json:
            print(json.dumps(as_json(events), indent=2))
        else:
            print("\n".join(e.line() for e in events) or f"nothing found for {args.correlation_id}")
        return 0
    return 2


def _dlq(target: Any, args: argparse.Namespace) -> int:
    from ops.dlq import format_history, format_list, history, list_queues, replay_queue

    if args.dlq_command == "list":
        summary = list_queues(target, wait_seconds=args.wait_seconds)
        print(json.dumps(summary, indent=2) if args.json else format_list(summary))
        return 0
    if args.dlq_command == "history":
        runs = history(target, args.hours)
        print(json.dumps(runs, indent=2) if args.json else format_history(runs))
        return 0
    if args.dlq_command == "discard":
        from ops.dlq_discard import discard

        done = discard(
            target, args.queue, args.message_id, reason=args.reason, force=args.force, wait_seconds=args.wait_seconds
        )
        print(json.dumps(done, indent=2))
        return 0
    report = replay_queue(
        target,
        args.queue,
        category=None if args.category == "all" else args.category,
        dry_run=args.dry_run,
        max_messages=args.max,
        rate=args.rate,
        force=args.force,
        wait_seconds=args.wait_seconds,
    )
    print(json.dumps(report, indent=2))
    return 0
