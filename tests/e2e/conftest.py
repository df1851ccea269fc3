"""End-to-end fixtures: one synthesized assembly per session (synth takes ~5 s)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.run import synthesize
from local_cloud.template import CloudAssembly


@pytest.fixture(scope="session")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> CloudAssembly:
    return synthesize(Path(tmp_path_factory.mktemp("cdk.out")), "dev")
