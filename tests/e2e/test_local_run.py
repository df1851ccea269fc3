"""The whole pipeline, run locally on moto from the synthesized template."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from harness.cli import main
from harness.run.run import RunOptions, run_local
from harness.workload.orders import DECLINE_TOKEN, OUT_OF_STOCK_SKU, UNDELIVERABLE_COUNTRY, OrderMix, make_orders
from local_cloud.template import CloudAssembly

pytestmark = pytest.mark.e2e

ORDERS = 24
SEED = 11
MIX = OrderMix(decline_rate=0.2, ship_fail_rate=0.2, out_of_stock_rate=0.1)
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def _kind(order: dict[str, Any]) -> str:
    if any(i["sku"] == OUT_OF_STOCK_SKU for i in order["items"]):
        return "out_of_stock"
    if str(order["payment_token"]).startswith(DECLINE_TOKEN):
        return "declined"
    if order["shipping_address"]["country"] == UNDELIVERABLE_COUNTRY:
        return "undeliverable"
    return "ok"


@pytest.fixture(scope="module")
def report(assembly: CloudAssembly) -> dict[str, Any]:
    return run_local(RunOptions(orders=ORDERS, seed=SEED, mix=MIX, assembly_dir=assembly.outdir))


@pytest.fixture(scope="module")
def expected() -> dict[str, tuple[str, str | None]]:
    return {o["order_id"]: (_kind(o), cid) for o, cid in make_orders(ORDERS, SEED, MIX)}


def test_local_run_mix_covers_every_path(expected: dict[str, tuple[str, str | None]]) -> None:
    kinds = {kind for kind, _ in expected.values()}
    assert kinds == {"ok", "declined", "undeliverable", "out_of_stock"}


def test_local_run_every_order_terminal(report: dict[str, Any]) -> None:
    orders = report["orders"]
    assert orders["submitted"] == ORDERS
    assert orders["in_flight"] == 0 and orders["failed"] == 0
    assert orders["completed"] + orders["compensated"] == ORDERS
    assert report["executions"] == {"SUCCEEDED": ORDERS}


def test_local_run_outcome_follows_the_order(
    report: dict[str, Any], expected: dict[str, tuple[str, str | None]]
) -> None:
    statuses = {d["order_id"]: d["status"] for d in report["order_details"]}
    for order_id, (kind, _) in expected.items():
        assert statuses[order_id] == ("COMPLETED" if kind == "ok" else "COMPENSATED"), order_id


def test_local_run_ledger_has_no_half_done_order(
    report: dict[str, Any], expected: dict[str, tuple[str, str | None]]
) -> None:
    kinds = [kind for kind, _ in expected.values()]
    ledger = report["ledger"]
    assert ledger["shipments"] == kinds.count("ok")
    assert ledger["charges"] == kinds.count("ok") + kinds.count("undeliverable")
    assert ledger["refunds"] == kinds.count("undeliverable")
    assert ledger["duplicate_charges"] == 0 and ledger["duplicate_shipments"] == 0
    assert ledger["charged_without_shipment_or_refund"] == []
    assert ledger["reservations_outstanding"] == 0


def test_local_run_correlation_ids_kept_or_minted(
    report: dict[str, Any], expected: dict[str, tuple[str, str | None]]
) -> None:
    stored = {d["order_id"]: d["correlation_id"] for d in report["order_details"]}
    for order_id, (_, sent) in expected.items():
        if sent:
            assert stored[order_id] == sent
        else:
            assert UUID.match(stored[order_id] or ""), stored[order_id]


def test_local_run_every_log_line_has_correlation_id(report: dict[str, Any]) -> None:
    logs = report["logs"]
    assert logs["lines"] > ORDERS * 5
    assert logs["without_correlation_id"] == 0
    assert set(logs["by_service"]) >= {"intake", "reserve-inventory", "charge-payment", "ship-order", "refund-payment"}


def test_local_run_dlqs_empty_and_no_alarm(report: dict[str, Any]) -> None:
    assert report["dlq"] and all(depth == 0 for depth in report["dlq"].values())
    assert report["alarms_in_alarm"] == []


def test_cli_local_run_json_report(assembly: CloudAssembly, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["local", "run", "--orders", "3", "--seed", "3", "--assembly", str(assembly.outdir), "--json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["orders"]["submitted"] == 3
    assert report["orders"]["completed"] + report["orders"]["compensated"] == 3
    assert set(report) >= {"orders", "ledger", "dlq", "logs"}
