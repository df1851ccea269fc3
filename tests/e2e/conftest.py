"""End-to-end fixtures: one synthesized assembly per test run, shared by the xdist workers (synth takes ~5 s)."""

from __future__ import annotations

import pytest

from harness.stack.synth import synthesize_once, xdist_run_root
from local_cloud.template import CloudAssembly


@pytest.fixture(scope="session")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> CloudAssembly:
    return synthesize_once(xdist_run_root(tmp_path_factory.getbasetemp()), "dev")
