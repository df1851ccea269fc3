"""``python -m harness.stack.patch_costs``: each speed change measured between two baselines (issue 43's rule)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.stack import patch_costs
from harness.stack.patch_costs import Run
from local_cloud.patches_speed import SPEED_CHANGES


@pytest.fixture
def scripted_runs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Path | None]]:
    """``run_once`` answers 100 CPU s for a baseline and 130 for a run with something off; records its calls."""
    calls: list[tuple[str, Path | None]] = []

    def run_once(disabled: str, orders: int, assembly: Path | None, seed: int) -> Run:
        calls.append((disabled, assembly))
        cpu = 130.0 if disabled else 100.0
        return Run(disabled, cpu, cpu / 2, True)

    monkeypatch.setattr(patch_costs, "run_once", run_once)
    return calls


def test_patch_costs_measures_every_change_between_baselines_by_default(
    scripted_runs: list[tuple[str, Path | None]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert patch_costs.main(["--gate", "--check"]) == 0
    changes = [c.name for c in SPEED_CHANGES]
    assert [d for d, _ in scripted_runs] == ["", *[x for c in changes for x in (c, "")]]
    assert all(assembly is None for _, assembly in scripted_runs)  # --gate: make workshop-tests, no synth
    out = capsys.readouterr().out
    assert f"| `{changes[0]}` | 130.0 | 100.0 / 100.0 | +30.0 CPU s (+30.0%) | yes | 65 / 50, 50 |" in out


def test_patch_costs_refuses_a_name_that_is_neither_patch_nor_change(
    scripted_runs: list[tuple[str, Path | None]],
) -> None:
    with pytest.raises(SystemExit):
        patch_costs.main(["--gate", "--patches", "url_dispatch_cache"])  # deleted on 2026-11-28
    assert scripted_runs == []
