"""The saga's state graph in docs/design.md, and the definition the exploration routes by
(tests/explore/saga.asl.json), are the synthesized definition's (tools/export_asl.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tests.infra.conftest import synth_pipeline
from tools.export_asl import definitions, graph_block, mermaid

DESIGN = Path(__file__).resolve().parents[2] / "docs" / "design.md"
REGENERATE = "python -m tools.export_asl --mermaid cdk.out OrderPipeline-dev docs/design.md (after make synth)"
#: Read by tests/explore/saga_model.py (tests.ops does not import tests.explore: a file, not a module).
EXPLORE_ASL = Path(__file__).resolve().parents[1] / "explore" / "saga.asl.json"


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


def test_saga_graph_explore_model_routes_by_the_synthesized_definition(definition: dict[str, Any]) -> None:
    """``make explore`` moves each execution by the template's own catchers and retriers: a definition change
    that is not exported there fails here (regenerate: ``python -m tools.export_asl cdk.out OrderPipeline-dev
    tests/explore`` after ``make synth``, then rename the one file to saga.asl.json)."""
    assert json.loads(EXPLORE_ASL.read_text()) == definition


def test_saga_graph_draws_a_named_catch_once_when_the_catch_all_goes_the_same_way() -> None:
    """A named catch to the target of the state's later ``States.ALL`` catch takes the same route: one edge."""
    definition = {
        "StartAt": "Step",
        "States": {
            "Step": {
                "Type": "Task",
                "End": True,
                "Catch": [
                    {"ErrorEquals": ["Declined"], "Next": "Undo"},
                    {"ErrorEquals": ["Busy"], "Next": "Park"},
                    {"ErrorEquals": ["States.ALL"], "Next": "Park"},
                ],
            },
            "Undo": {"Type": "Succeed"},
            "Park": {"Type": "Fail"},
        },
    }
    graph = mermaid(definition)
    assert '    Step -.->|"Declined"| Undo' in graph and '    Step -.->|"any error"| Park' in graph
    assert "Busy" not in graph
