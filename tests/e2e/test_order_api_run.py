"""``ops local run --via api``: the whole local run with every order POSTed to the order API.

Its own module: it deploys its own pipeline, which must not share moto with another module's
running deployment (test_order_api.py keeps one for its module)."""

from __future__ import annotations

import pytest

from harness.run.run import RunOptions
from local_cloud.template import CloudAssembly

pytestmark = pytest.mark.e2e


def test_order_api_local_run_via_api_keeps_every_invariant(assembly: CloudAssembly) -> None:
    from harness.faults.chaos import FaultRates
    from harness.run.run import run_local

    faults = FaultRates(duplicate=0.2, malformed=0.2, hostile=0.2)
    report = run_local(RunOptions(orders=8, seed=4, via="api", faults=faults, assembly_dir=assembly.outdir))
    assert report["front_door"]["via"] == "api"
    assert report["front_door"]["accepted"] >= 8
    assert {k: v for k, v in report["invariants"].items() if v} == {}
    assert report["orders"]["submitted"] == 8 and report["orders"]["in_flight"] == 0
