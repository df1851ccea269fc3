"""The pager in the local run: business outcomes never page, once AWS's own metrics are evaluated.

AWS counts every function error in ``AWS/Lambda Errors``, a declined card raised for the saga to
catch included; the emulator produces those metrics and evaluates every alarm on them.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest

from harness.faults.chaos import FaultRates
from harness.run.run import RunOptions, run_local
from harness.workload.orders import KINDS, OrderMix, make_orders, order_kind
from local_cloud.template import CloudAssembly

pytestmark = pytest.mark.e2e

#: Every business outcome, no infrastructure fault: declines, undeliverable addresses, unstocked SKUs, partial
#: captures, authorisations never captured, refunds that fail twice then succeed; and duplicate deliveries.
BUSINESS = OrderMix(
    decline_rate=0.15,
    ship_fail_rate=0.15,
    out_of_stock_rate=0.1,
    partial_capture_rate=0.1,
    auth_only_rate=0.1,
    refund_flaky_rate=0.1,
)


@pytest.fixture(scope="module")
def business_report(assembly: CloudAssembly) -> dict[str, Any]:
    # Seed 10: all seven kinds among 12 orders, and duplicates delivered in a later batch and late.
    faults = FaultRates(duplicate=0.2)
    return run_local(RunOptions(orders=12, seed=10, mix=BUSINESS, faults=faults, assembly_dir=assembly.outdir))


def test_pager_business_only_run_pages_nobody(business_report: dict[str, Any]) -> None:
    kinds = {order_kind(order) for order, _ in make_orders(12, 10, BUSINESS)}
    assert kinds == {"ok", *KINDS} - {"refund_fails"}, "every business outcome but a refund that never succeeds"
    assert business_report["faults_injected"], "duplicate deliveries"
    statuses = {d["status"] for d in business_report["order_details"]}
    assert statuses == {"COMPLETED", "COMPENSATED"}
    assert business_report["pager"]["pages"] == []
    assert business_report["alarms_in_alarm"] == []
    assert business_report["invariants"]["pager_precision_and_recall_100_percent"] is None


def test_pager_provider_outage_pages_within_a_minute(assembly: CloudAssembly) -> None:
    """The payment provider answers 503 to every charge (an outage): each failure is transient and retried
    (no function alarm), yet the outage alarm (a share of transient failures) pages within a minute (0023)."""
    import order_domain.clock
    from sandbox import payment

    original = payment.handle
    failed_at: list[float] = []  # the run's clock (the harness wires order_domain.clock to it)

    def down(request: dict[str, Any], ledger: Any) -> dict[str, Any]:
        if request.get("action") == "charge":
            failed_at.append(order_domain.clock.now())
            return {"status": "error", "error": "provider_unavailable"}
        return original(request, ledger)

    with mock.patch.object(payment, "handle", down):
        report = run_local(RunOptions(orders=16, seed=7, mix=OrderMix(), assembly_dir=assembly.outdir))
    outage = [p for p in report["pager"]["pages"] if p["kind"] == "provider_outage"]
    assert outage and outage[0]["delivered"], report["pager"]["pages"]
    # Within a minute of the outage happening (its first failed charge), not of the run's start: a loaded
    # machine takes longer to bring the first orders to ChargePayment.
    assert outage[0]["at"] - min(failed_at) <= 60, (outage[0]["at"] - min(failed_at), outage[0]["after_s"])
