"""A pipeline context is synthesized once per test process: every module asking for it shares one app."""

from __future__ import annotations

from pathlib import Path

from tests.infra.conftest import SynthResult, synth_pipeline


def test_synth_pipeline_gives_the_sessions_app_for_the_same_context(dev: SynthResult, tmp_path: Path) -> None:
    again = synth_pipeline(tmp_path, stage="dev")
    assert again is dev
    assert not any(tmp_path.iterdir())  # nothing synthesized again
