"""The local run's assembly is synthesized once per test run, whichever pytest-xdist worker asks first."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any
from unittest import mock

from harness.stack import synth


def _fake_synthesize(calls: list[Path]) -> Any:
    def synthesize(outdir: Path, stage: str, extra_context: Any = None) -> Any:
        calls.append(outdir)
        outdir.mkdir(parents=True)
        (outdir / "manifest.json").write_text("{}")
        return None

    return synthesize


def test_synthesize_once_synthesizes_the_first_time_only(tmp_path: Path) -> None:
    calls: list[Path] = []
    with (
        mock.patch.object(synth, "synthesize", _fake_synthesize(calls)),
        mock.patch.object(synth, "CloudAssembly", lambda outdir, name: (outdir, name)),
    ):
        results = []
        threads = [
            threading.Thread(target=lambda: results.append(synth.synthesize_once(tmp_path, "dev"))) for _ in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(calls) == 1
    assert results == [(calls[0], "OrderPipeline-dev")] * 4


def test_synthesize_once_synthesizes_again_after_a_synth_that_did_not_finish(tmp_path: Path) -> None:
    calls: list[Path] = []
    (tmp_path / "local-dev").mkdir()  # a synth killed half-way: no completion mark
    with (
        mock.patch.object(synth, "synthesize", _fake_synthesize(calls)),
        mock.patch.object(synth, "CloudAssembly", lambda outdir, name: (outdir, name)),
    ):
        synth.synthesize_once(tmp_path, "dev")
    assert len(calls) == 1
