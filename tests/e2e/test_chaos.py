"""The 200-order chaos run with every fault on: the invariants hold (``ops local run --check``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from local_cloud.template import CloudAssembly

pytestmark = pytest.mark.e2e

CHAOS_ARGS = [
    "--orders", "200", "--seed", "42",
    "--duplicate-rate", "0.1", "--crash-rate", "0.03", "--decline-rate", "0.1", "--ship-fail-rate", "0.1",
    "--refund-fail-rate", "0.03", "--malformed-rate", "0.03", "--throttle-rate", "0.02",
    "--ambiguous-rate", "0.01", "--status-write-fail-rate", "0.02", "--park-fail-rate", "0.05", "--stop-rate", "0.002",
    "--replay-transient", "--check",
]  # fmt: skip


@pytest.fixture(scope="module")
def chaos(assembly: CloudAssembly, tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict]:
    report_file = Path(tmp_path_factory.mktemp("chaos")) / "report.json"
    code = main(["local", "run", *CHAOS_ARGS, "--assembly", str(assembly.outdir), "--report-file", str(report_file)])
    return code, json.loads(report_file.read_text())


def test_chaos_run_every_invariant_holds(chaos: tuple[int, dict]) -> None:
    code, report = chaos
    failed = {k: v for k, v in report["invariants"].items() if v}
    assert failed == {} and code == 0


def test_chaos_run_faults_were_really_injected(chaos: tuple[int, dict]) -> None:
    _, report = chaos
    faults = report["faults_injected"]
    assert faults.get("crash", 0) > 0 and faults.get("malformed", 0) > 0
    assert sum(v for k, v in faults.items() if k.startswith("duplicate_")) > 0
    assert faults.get("throttle_dynamodb", 0) > 0
    assert report["orders"]["needs_attention"] > 0 and report["orders"]["compensated"] > 0
    assert report["duplicates_suppressed"] > 0


def test_chaos_run_saga_faults_were_injected_and_checked(chaos: tuple[int, dict]) -> None:
    _, report = chaos
    faults = report["faults_injected"]
    assert sum(v for k, v in faults.items() if k.startswith("ambiguous_")) > 0
    assert faults.get("status_write_error", 0) > 0
    assert report["failed_executions"]["unexplained"] == [] and report["status_disagreements"] == []
    for name in ("failed_executions_equal_parked_plus_refused", "no_terminal_order_disagrees_with_its_side_effects"):
        assert report["invariants"][name] is None


def test_chaos_run_zero_duplicate_money_and_shipments(chaos: tuple[int, dict]) -> None:
    _, report = chaos
    effects = report["side_effects"]
    assert effects["charges"] > 0 and effects["shipments"] > 0
    assert effects["duplicate_charges"] == effects["duplicate_refunds"] == effects["duplicate_shipments"] == 0
    assert effects["duplicate_charge_requests"] <= report["faults_injected"]["crash"]


def test_chaos_run_only_parked_orders_hold_money_and_they_alarm(chaos: tuple[int, dict]) -> None:
    _, report = chaos
    parked = {d["order_id"] for d in report["order_details"] if d["status"] == "NEEDS_ATTENTION"}
    assert parked
    assert set(report["ledger"]["charged_without_shipment_or_refund"]) <= parked
    assert any("NeedsAttentionQueueQueueDepthAlarm" in a for a in report["alarms_in_alarm"])


def test_chaos_run_report_has_cost_and_calls(chaos: tuple[int, dict]) -> None:
    _, report = chaos
    assert report["aws_calls"]["per_order"] > 0
    assert set(report["aws_calls"]["by_service"]) >= {"dynamodb", "lambda", "sqs", "states"}
    usd = report["cost"]["usd_per_million_orders"]
    assert usd["standard_workflow"] > usd["express_workflow"] > 0
    assert usd["express_trade_offs"]
