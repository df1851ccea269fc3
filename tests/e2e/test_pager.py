"""The pager in the local run: business outcomes never page, once AWS's own metrics are evaluated.

AWS counts every function error in ``AWS/Lambda Errors``, a declined card raised for the saga to
catch included; the emulator produces those metrics and evaluates every alarm on them.
"""

from __future__ import annotations

from typing import Any

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
