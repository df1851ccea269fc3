"""The bench's per-order figures (``make bench``, :mod:`tools.bench`): two whole-pipeline runs on moto
(``python -m harness local run`` in a subprocess), their Lambda invocations, state transitions and bill."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
#: The pipeline runs behind the per-order figures: every order on the happy path, and the business
#: mix of ``make chaos`` (declines, undeliverable addresses, refunds that keep failing) without its
#: infrastructure faults (what a normal day costs).
PIPELINE_ORDERS = 100
HAPPY_MIX = (
    "--decline-rate",
    "0",
    "--ship-fail-rate",
    "0",
    "--out-of-stock-rate",
    "0",
    "--partial-capture-rate",
    "0",
    "--auth-only-rate",
    "0",
    "--refund-flaky-rate",
    "0",
    "--refund-fail-rate",
    "0",
)
BUSINESS_MIX = ("--decline-rate", "0.1", "--ship-fail-rate", "0.1", "--refund-fail-rate", "0.03")


def _pipeline_run(mix: tuple[str, ...], name: str) -> dict[str, Any]:
    """``python -m harness local run`` (the whole pipeline on moto, in a subprocess) and its report."""
    report_file = REPO / ".build" / f"bench-{name}.json"
    report_file.parent.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "harness",
        "local",
        "run",
        "--orders",
        str(PIPELINE_ORDERS),
        "--seed",
        "13",
        *mix,
        "--check",
        "--report-file",
        str(report_file),
    ]
    run = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    if run.returncode != 0:  # say which check failed, not only that the subprocess did
        lines = (run.stdout + run.stderr).splitlines()
        failed = [line for line in lines if line.startswith(("FAIL", "pager:", "invariants:"))]
        raise RuntimeError(f"bench: `{' '.join(command[1:])}` exited {run.returncode}: {failed or run.stderr[-2000:]}")
    report: dict[str, Any] = json.loads(report_file.read_text())
    return report


def pipeline_figures() -> dict[str, Any]:
    """Lambda invocations and state transitions per completed order, and USD per million orders."""
    happy, mixed = _pipeline_run(HAPPY_MIX, "happy"), _pipeline_run(BUSINESS_MIX, "mix")

    def per_completed(report: dict[str, Any], unit: str) -> float:
        orders = report["orders"]
        return float(report["cost"]["per_order"][unit]) * orders["submitted"] / max(1, orders["completed"])

    usd = mixed["cost"]["usd_per_million_orders"]
    bill, before = mixed["cost"]["all_in"], mixed["cost"]["all_in_before_levers"]
    warn = mixed["cost"]["all_in_warn_app_logs"]
    return {
        "usd_per_million_orders_all_in": bill["usd_per_million_orders"],
        "usd_per_million_orders_all_in_parts": bill["items"],
        "usd_per_million_orders_all_in_before_levers": before["usd_per_million_orders"],
        "usd_per_million_orders_all_in_warn_app_logs": warn["usd_per_million_orders"],
        "all_in_detail": {"chosen": bill, "before_levers": before, "warn_app_logs": warn},
        "lambda_invocations_per_order": round(per_completed(happy, "lambda_invocations"), 2),
        "state_transitions_per_order": round(per_completed(happy, "state_transitions"), 2),
        "lambda_invocations_per_order_mix": round(float(mixed["cost"]["per_order"]["lambda_invocations"]), 2),
        "state_transitions_per_order_mix": round(float(mixed["cost"]["per_order"]["state_transitions"]), 2),
        "usd_per_million_orders_standard": usd["standard_workflow"],
        "usd_per_million_orders_express": usd["express_workflow"],
        "usd_detail": usd,
        "orders": {"happy": happy["orders"], "mix": mixed["orders"]},
    }
