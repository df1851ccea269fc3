"""The pager in the local run: business outcomes never page, once AWS's own metrics are evaluated.

AWS counts every function error in ``AWS/Lambda Errors``, a declined card raised for the saga to
catch included; the emulator produces those metrics and evaluates every alarm on them.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest

from local_cloud.template import CloudAssembly
from ops.local.orders import OrderMix
from ops.local.run import RunOptions, run_local

pytestmark = pytest.mark.e2e

#: Declines, undeliverable addresses and unstocked SKUs, no infrastructure fault.
BUSINESS = OrderMix(decline_rate=0.3, ship_fail_rate=0.3, out_of_stock_rate=0.15)


@pytest.fixture(scope="module")
def business_report(assembly: CloudAssembly) -> dict[str, Any]:
    return run_local(RunOptions(orders=12, seed=5, mix=BUSINESS, assembly_dir=assembly.outdir))


def test_pager_business_only_run_pages_nobody(business_report: dict[str, Any]) -> None:
    statuses = {d["status"] for d in business_report["order_details"]}
    assert "COMPENSATED" in statuses, "the mix has business failures"
    assert business_report["pager"]["pages"] == []
    assert business_report["alarms_in_alarm"] == []
    assert business_report["invariants"]["pager_precision_and_recall_100_percent"] is None


def test_pager_provider_outage_pages_within_a_minute(assembly: CloudAssembly) -> None:
    """The payment provider answers 503 to every charge (an outage): each failure is transient and retried
    (no function alarm), yet the outage alarm (a share of transient failures) pages within a minute (0023)."""
    from sandbox import payment

    original = payment.handle

    def down(request: dict[str, Any], ledger: Any) -> dict[str, Any]:
        if request.get("action") == "charge":
            return {"status": "error", "error": "provider_unavailable"}
        return original(request, ledger)

    with mock.patch.object(payment, "handle", down):
        report = run_local(RunOptions(orders=16, seed=7, mix=OrderMix(), assembly_dir=assembly.outdir))
    outage = [p for p in report["pager"]["pages"] if p["kind"] == "provider_outage"]
    assert outage and outage[0]["delivered"], report["pager"]["pages"]
    assert outage[0]["after_s"] <= 60
