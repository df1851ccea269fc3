"""The small scaled spike both spike modules run (``test_spike_backoff``, ``test_spike_today``): one module
each, so that ``--dist loadfile`` computes each spike once, the two on different workers.

The spike is 1:100 with a StartExecution quota of 30/s (bucket 130) at 1:1, 6,000 orders/min for
4 minutes: 240 orders, 0.3 starts/s measured, a backlog that lasts longer than 3 receives of the
queue's 180 s visibility timeout. (The drain ends with the last requeued records' jittered delays,
up to a minute: a 4-minute peak keeps that tail small next to the drain the model predicts.)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.run.run import synthesize
from harness.spike.spike import SpikeOptions, run_spike
from local_cloud.limits import Quotas
from local_cloud.template import CloudAssembly

QUOTAS = Quotas(sfn_start_bucket=130, sfn_start_refill=30)

SPIKE: dict[str, Any] = {
    "peak_per_second": 100.0,
    "baseline_per_second": 0.5,
    "minutes": 4.0,
    "scale": 100.0,
    "quotas": QUOTAS,
}


Spike = tuple[dict[str, Any], Path]  # the spike's report and its cloud assembly's folder


def spike(tmp: Path, backoff: bool, assembly: CloudAssembly) -> Spike:
    """Run the spike on the dev stage: with intake's backoff (the default), the test run's own assembly; without
    it, a synth of that variant into ``tmp``."""
    out = assembly.outdir
    if not backoff:
        out = tmp / "today"
        synthesize(out, "dev", {"intake_throttle_backoff": False})
    options = SpikeOptions(**SPIKE, throttle_backoff=backoff, assembly_dir=out, plot=None)
    return run_spike(options), out


def spike_fixture(backoff: bool) -> Callable[..., Spike]:
    """A module-scoped fixture running the spike once per module (with or without intake's backoff)."""

    @pytest.fixture(scope="module")
    def run(tmp_path_factory: pytest.TempPathFactory, assembly: CloudAssembly) -> Spike:
        return spike(tmp_path_factory.mktemp("spike"), backoff=backoff, assembly=assembly)

    return run
