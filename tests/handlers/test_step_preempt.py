"""The step middleware's ``preempt`` check: it runs before the idempotency record (a recorded result
never answers it) and inside the failure accounting (a routing outcome is an expected error; a bug in
it is not)."""

from __future__ import annotations

import json
import os
from typing import Any
from unittest import mock

import pytest

from lambda_resilience.exceptions import BusinessOutcome, UnknownStepError
from lambda_resilience.step import EXPECTED_ERRORS_METRIC
from order_domain.step import build_step_handler


class Routed(BusinessOutcome):
    """An input that sends the workflow elsewhere."""


def _expected(out: str) -> list[float]:
    docs = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    values = [d[EXPECTED_ERRORS_METRIC] for d in docs if "_aws" in d and EXPECTED_ERRORS_METRIC in d]
    return [float(x) for v in values for x in (v if isinstance(v, list) else [v])]


@pytest.mark.parametrize(
    ("raised", "surfaced", "expected"), [(Routed("elsewhere"), Routed, [1.0]), (KeyError("bug"), UnknownStepError, [])]
)
def test_step_preempt_runs_before_the_record_and_counts_like_the_step(
    pipeline_env: dict[str, str],
    saga_input: Any,
    order_factory: Any,
    lambda_context: Any,
    capsys: pytest.CaptureFixture[str],
    raised: Exception,
    surfaced: type[Exception],
    expected: list[float],
) -> None:
    calls: list[dict[str, Any]] = []
    event = saga_input(order_factory())

    def preempt(seen: Any) -> None:
        if seen.get("route"):
            raise raised

    with mock.patch.dict(os.environ, {**pipeline_env, "POWERTOOLS_SERVICE_NAME": "preempted-step"}):
        handler = build_step_handler(
            "preempted-step", lambda settings: lambda payload: calls.append(payload) or {"ok": True}, preempt=preempt
        )
    assert handler(event, lambda_context) == {"ok": True}  # recorded
    capsys.readouterr()

    with pytest.raises(surfaced):
        handler({**event, "route": True}, lambda_context)  # not answered from the record

    assert _expected(capsys.readouterr().out) == expected
    assert len(calls) == 1
