"""The saga's state graph in docs/design.md is the synthesized definition's (tools/export_asl.py --mermaid)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.infra.conftest import synth_pipeline
from tools.export_asl import definitions, graph_block, mermaid

DESIGN = Path(__file__).resolve().parents[2] / "docs" / "design.md"
REGENERATE = "python -m tools.export_asl --mermaid cdk.out OrderPipeline-dev docs/design.md (after make synth)"


@pytest.fixture(scope="module")
def definition(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    outdir = synth_pipeline(tmp_path_factory.mktemp("cdk-dev"), stage="dev").outdir
    (only,) = definitions(outdir, "OrderPipeline-dev").values()
    return only


def test_saga_graph_in_design_doc_matches_the_template(definition: dict[str, Any]) -> None:
    assert graph_block(DESIGN.read_text()) == mermaid(definition), f"regenerate it: {REGENERATE}"


def test_saga_graph_draws_every_state_and_every_catch(definition: dict[str, Any]) -> None:
    graph = mermaid(definition)
    for name, state in definition["States"].items():
        assert name in graph
        for catch in state.get("Catch", []):
            assert f"| {catch['Next']}" in graph
    assert "ReserveInventory --> ChargePayment" in graph


def test_saga_graph_changes_with_the_definition(definition: dict[str, Any]) -> None:
    changed = copy.deepcopy(definition)
    changed["States"]["ChargePayment"]["Catch"][0]["ErrorEquals"] = ["SomethingElse"]
    assert mermaid(changed) != mermaid(definition)
