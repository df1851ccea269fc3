"""The saga's paths for the independent ASL engine: enumerated from the definition, compared state by state."""

from __future__ import annotations

from typing import Any

import pytest

from harness.engines.asl_paths import Run, compare_runs, enumerate_paths, stub_definition

TASK_RETRY = [{"ErrorEquals": ["Transient"], "MaxAttempts": 2}, {"ErrorEquals": ["States.ALL"], "MaxAttempts": 1}]
DEFINITION: dict[str, Any] = {
    "StartAt": "Charge",
    "States": {
        "Charge": {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke",
            "Retry": TASK_RETRY,
            "Catch": [
                {"ErrorEquals": ["Declined"], "Next": "Refused"},
                {"ErrorEquals": ["States.ALL"], "Next": "Undo"},
            ],
            "Next": "Done",
        },
        "Undo": {"Type": "Task", "Resource": "arn:aws:states:::dynamodb:updateItem", "End": True},
        "Refused": {"Type": "Fail", "Error": "Refused"},
        "Done": {"Type": "Succeed"},
    },
}


def test_enumerate_paths_one_per_edge_of_each_task() -> None:
    paths = enumerate_paths(DEFINITION)
    assert {tuple(p.states) for p in paths} == {
        ("Charge", "Done"),
        ("Charge", "Refused"),
        ("Charge", "Undo"),
    }
    assert len(paths) == 4  # Undo's error, caught by nothing, fails the execution: a path of its own
    by_outcome = {tuple(sorted(p.outcomes.items(), key=str)): p for p in paths}
    assert len(by_outcome) == len(paths)  # no two paths alike


def test_enumerate_paths_catch_all_error_is_one_a_retrier_names() -> None:
    undo = next(p for p in enumerate_paths(DEFINITION) if p.states[-1] == "Undo")
    assert undo.outcomes["Charge"] == "Transient"  # retried twice by the first retrier, then caught
    refused = next(p for p in enumerate_paths(DEFINITION) if p.states[-1] == "Refused")
    assert refused.outcomes["Charge"] == "Declined"
    assert refused.expected_status == "FAILED"


def test_enumerate_paths_refuses_a_choice_state_it_cannot_steer() -> None:
    definition = {"StartAt": "C", "States": {"C": {"Type": "Choice", "Choices": [], "Default": "D"}}}
    with pytest.raises(NotImplementedError, match="Choice"):
        enumerate_paths(definition)


def test_stub_definition_points_every_task_at_its_own_stub_function() -> None:
    stubbed = stub_definition(DEFINITION)
    assert stubbed["States"]["Charge"]["Resource"].endswith(":function:stub-Charge")
    assert stubbed["States"]["Undo"]["Resource"].endswith(":function:stub-Undo")
    assert stubbed["States"]["Charge"]["Retry"] == TASK_RETRY
    assert DEFINITION["States"]["Charge"]["Resource"] == "arn:aws:states:::lambda:invoke"  # not mutated


def test_compare_runs_names_each_aspect_that_differs() -> None:
    a = Run(entered=["Charge", "Undo"], retries={"Charge": 2}, status="SUCCEEDED", error=None)
    b = Run(entered=["Charge", "Undo"], retries={"Charge": 3}, status="SUCCEEDED", error=None)
    assert compare_runs(a, a) == []
    assert compare_runs(a, b) == ["retries: {'Charge': 2} != {'Charge': 3}"]
    c = Run(entered=["Charge"], retries={}, status="FAILED", error="X")
    assert [d.split(":")[0] for d in compare_runs(a, c)] == ["entered", "retries", "status", "error"]
