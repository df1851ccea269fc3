"""The generic saga's ``park_unknown_errors``: a forward step's error nobody named as a business outcome parks
the item for a person instead of compensating it (decision 0034); ``compensate_on`` names the business errors."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk import App, Stack

from constructs_lib.generic_saga import LambdaTask, Saga, SagaProps, SagaRecorder, SagaStep
from tests.infra.test_generic_saga import _definition, _fn, _steps


def _catches(state: dict[str, Any]) -> list[tuple[list[str], str, str]]:
    return [(c["ErrorEquals"], c["Next"], c["ResultPath"]) for c in state["Catch"]]


def _saga(stack: Stack, steps: list[SagaStep], **extra: Any) -> dict[str, Any]:
    parked = SagaRecorder("Park", LambdaTask(_fn(stack, "P")))
    Saga(stack, "Saga", props=SagaProps(steps=steps, parked=parked, **extra))
    states: dict[str, Any] = _definition(stack)["States"]
    return states


def test_saga_park_unknown_errors_parks_what_no_business_error_names() -> None:
    stack = Stack(App(), "SagaUnderTest")
    steps = _steps(stack)
    steps[0] = SagaStep(
        "Reserve", LambdaTask(_fn(stack, "R2")), compensation=LambdaTask(_fn(stack, "UR2")), compensate_on=("NoStock",)
    )
    states = _saga(stack, steps, park_unknown_errors=True)
    assert _catches(states["Reserve"]) == [
        (["InvalidStepInput"], "InputRefused", "$.error"),  # the default refused input, first
        (["NoStock"], "UndoReserve", "$.error"),  # the business outcome still undoes the step
        (["States.ALL"], "Park", "$.compensation_error"),  # anything else: a person decides, nothing undone
    ]
    assert _catches(states["Charge"]) == [
        (["Declined"], "UndoReserve", "$.error"),
        (["States.ALL"], "Park", "$.compensation_error"),
    ]
    assert _catches(states["Notify"])[-1] == (["States.ALL"], "Park", "$.compensation_error")


def test_saga_without_park_unknown_errors_compensates_on_anything_else() -> None:
    """The classic saga stays the library's default: a library user's definition is unchanged."""
    stack = Stack(App(), "SagaUnderTest")
    states = _saga(stack, _steps(stack))
    assert _catches(states["Charge"])[-1] == (["States.ALL"], "UndoCharge", "$.error")


@pytest.mark.parametrize(
    ("extra", "compensate_on", "message"),
    [
        ({}, ("States.ALL",), "compensate_on cannot be States.ALL"),
        ({}, ("Declined",), "two meanings"),
        ({"park_on": ("Busy",), "retry_on": ("Busy",)}, ("Busy",), "two meanings"),
    ],
)
def test_saga_compensate_on_refuses_what_it_cannot_keep(
    extra: dict[str, Any], compensate_on: tuple[str, ...], message: str
) -> None:
    stack = Stack(App(), "SagaUnderTest")
    steps = _steps(stack)
    steps[1] = SagaStep(
        "Charge",
        LambdaTask(_fn(stack, "C2")),
        compensation=LambdaTask(_fn(stack, "UC2")),
        skip_compensation_on=("Declined",),
        compensate_on=compensate_on,
    )
    with pytest.raises(ValueError, match=message):
        _saga(stack, steps, **extra)


def test_saga_park_unknown_errors_needs_a_parked_recorder() -> None:
    stack = Stack(App(), "SagaUnderTest")
    with pytest.raises(ValueError, match="park_unknown_errors needs a parked recorder"):
        Saga(stack, "Saga", props=SagaProps(steps=_steps(stack), park_unknown_errors=True))
