"""Each execution waits its own Retry waits (docs/decisions/0026): executions retrying at the same time do
not add their waits up on the simulated clock, so a provider outage's failures per simulated minute are
what AWS would see, whatever the number of executions waiting at once."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest

from harness.run.run import RunOptions, run_local
from harness.workload.orders import OrderMix
from local_cloud.template import CloudAssembly

pytestmark = pytest.mark.e2e

#: The saga's outage retrier on a transient error (stacks/order_constructs/saga_retries.py): 20 retries from 2 s,
#: doubling, each at most 60 s, full jitter: one execution's waits add up to at most 2+4+8+16+32+15x60 s.
ONE_EXECUTIONS_WAITS = 962.0
#: The orders reach ChargePayment over a few seconds (intake batches), and each attempt takes work time.
WORK_SLACK = 20.0


def test_retry_waits_outage_failures_lie_within_one_executions_retry_waits(assembly: CloudAssembly) -> None:
    """The payment provider is down for good: 16 executions retry their charge at the same time. On AWS each
    waits its own backoff, so every failed charge falls within one execution's waits of the first; a shared
    clock advanced by every wait spread them over the sum of all the executions' waits (today: minutes)."""
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
        run_local(RunOptions(orders=16, seed=7, mix=OrderMix(), assembly_dir=assembly.outdir))
    spread = max(failed_at) - min(failed_at)
    assert len(failed_at) >= 16 * 21, len(failed_at)  # every execution made all 21 attempts (each answered 503)
    assert spread <= ONE_EXECUTIONS_WAITS + WORK_SLACK, f"failed charges spread over {spread:.0f} simulated s"
