"""A run whose Lambda concurrency is exhausted: a throttle is waited out, never a cancelled sale (issue 40)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.reporting.lost_sales import INVARIANT
from harness.run.run import RunOptions, run_local
from harness.workload.orders import OrderMix
from local_cloud.limits import Quotas
from local_cloud.template import CloudAssembly

pytestmark = pytest.mark.e2e

#: Only valid orders (good token, in stock, deliverable), two concurrent invocations for the whole account.
VALID_ONLY = OrderMix(decline_rate=0, ship_fail_rate=0, out_of_stock_rate=0)


@pytest.fixture(scope="module")
def report(assembly: CloudAssembly) -> dict[str, Any]:
    quotas = Quotas().with_overrides({"lambda_concurrency": 2})
    return run_local(RunOptions(orders=20, seed=7, mix=VALID_ONLY, assembly_dir=assembly.outdir, quotas=quotas))


def test_throttled_run_completes_every_valid_order(report: dict[str, Any]) -> None:
    assert report["throttles"].get("lambda:Invoke", 0) > 0  # the quota did bite
    assert report["orders"]["completed"] == 20, report["lost_sales"]
    assert report["lost_sales"]["valid"] == 20 and report["lost_sales"]["lost"] == 0
    assert report["invariants"][INVARIANT] is None
