"""``python -m ops local run``: a parsed run command's options, its run (one process or sharded), and its output."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any


def run_command(args: argparse.Namespace, argv: Sequence[str] | None, quotas: Any) -> int:
    """Run a parsed ``local run`` command on these quotas; the exit status."""
    from harness.run.run import run_local

    options = run_options(args, quotas)
    if args.workers > 1:
        from harness.run.shards import run_sharded

        passthrough = [a for a in (argv if argv is not None else sys.argv[1:])[2:]]
        passthrough = _without(
            passthrough, ("--workers", "--assembly", "--report-file", "--json", "--check", "--expect-no-pages")
        )
        report = run_sharded(options, passthrough, args.workers)
    else:
        from harness.run.shards import shard_options

        report = run_local(shard_options(options, args.shard, args.shards))
    if args.expect_no_pages:
        report["invariants"][NO_PAGES] = _pages_seen(report)
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


def run_options(args: argparse.Namespace, quotas: Any) -> Any:
    """The :class:`~harness.run.run.RunOptions` of a parsed ``local run`` command."""
    from harness.faults.chaos import FaultRates
    from harness.run.run import RunOptions
    from harness.workload.orders import OrderMix

    return RunOptions(
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
        repair_parked=args.repair_parked,
        incidents=args.incidents,
        stage=args.stage,
        timeout_seconds=args.timeout,
        assembly_dir=args.assembly,
        echo_logs=args.echo_logs,
        quotas=quotas,
        via=args.via,
    )


#: The invariant ``--expect-no-pages`` adds.
NO_PAGES = "no_page_in_a_run_without_incidents"


def _pages_seen(report: dict[str, Any]) -> str | None:
    """None when the run paged nobody; else how many pages, of which alarms."""
    pages = [p["alarm"] for p in report.get("pager", {}).get("pages", [])]
    return f"{len(pages)} pages: {', '.join(sorted(set(pages))[:5])}" if pages else None


def _without(args: list[str], options_with_values: tuple[str, ...]) -> list[str]:
    """Drop the given options (and their values, if any) from an argument list."""
    flags = {"--json", "--check", "--expect-no-pages"}
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
    """The run in a few lines: each order, then outcomes, invariants and where to look next."""
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
    for kind, ended in (report.get("hostile") or {}).items():
        where = ", ".join(f"{k} {v}" for k, v in ended.items() if k != "injected")
        print(f"hostile {kind}: {ended['injected']} injected ({where})")
    if "cost" in report:
        usd = report["cost"]["usd_per_million_orders"]
        print(
            f"USD per million orders: {usd['standard_workflow']} (Standard workflow), "
            f"{usd['express_workflow']} Express (what Express would lose: docs/decisions/0001)"
        )
    if "pager" in report:
        from harness.reporting.pager import pager_table

        print()
        for line in pager_table(report["pager"]):
            print(line)
    if "notifications" in report:
        from harness.reporting.notifications import notification_lines

        for line in notification_lines(report["notifications"], int(report.get("notifications_at_start", 0))):
            print(line)
    if "lost_sales" in report:
        from harness.reporting.lost_sales import lost_sales_line

        print(lost_sales_line(report["lost_sales"]))
    if "oncall" in report:
        from harness.run.oncall import oncall_line

        print(oncall_line(report["oncall"]))
    failed = sorted(name for name, why in report["invariants"].items() if why)
    held = len(report["invariants"]) - len(failed)
    print(f"invariants: {held} hold" + (f", {len(failed)} fail: {', '.join(failed)}" if failed else ""))
    e = report["elapsed"]
    print(f"elapsed: {e['wall_seconds']} s wall, {e['simulated_seconds']} s simulated")
    print(
        "next: --json for the full report (logs, IAM, costs, per-order units), --check to fail on an invariant; "
        "docs/local-run.md explains each figure"
    )
