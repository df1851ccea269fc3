"""The step middleware's defaults: business outcomes are counted as ``ExpectedErrors`` with no parameter to
remember (issue 42), under the namespace and ``service`` the function's alarm reads (its environment)."""

from __future__ import annotations

import json
import os
from typing import Any
from unittest import mock

import pytest
from aws_lambda_powertools.utilities.typing import LambdaContext

from lambda_resilience.exceptions import BusinessOutcome, ConfigurationError, UnknownStepError
from lambda_resilience.idempotency import IdempotentOperation
from lambda_resilience.step import EXPECTED_ERRORS_METRIC, StepInput, step_handler

from .conftest import Observed


class NoSeat(BusinessOutcome):
    """A team's business outcome: the flight is full."""


def _parse(event: Any) -> StepInput:
    return StepInput(idempotency_key=f"{event['booking']}#book-flight", payload={"booking": event["booking"]})


def _emf_documents(out: str) -> list[dict[str, Any]]:
    docs = []
    for line in out.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict) and "_aws" in doc:
            docs.append(doc)
    return docs


def _build(observed: Observed, table: str, raised: Exception) -> Any:
    def book(payload: dict[str, Any]) -> dict[str, Any]:
        raise raised

    idempotent = IdempotentOperation(table, ttl_seconds=3600, logger=observed.logger)
    return step_handler("book-flight", book, parse=_parse, idempotent=idempotent, logger=observed.logger)


@pytest.mark.parametrize(
    ("raised", "surfaced", "counted"), [(NoSeat("full"), NoSeat, [1.0]), (KeyError("bug"), UnknownStepError, [])]
)
def test_step_handler_counts_expected_errors_without_a_metrics_parameter(
    idempotency_table: str,
    observed: Observed,
    lambda_context: LambdaContext,
    capsys: pytest.CaptureFixture[str],
    raised: Exception,
    surfaced: type[Exception],
    counted: list[float],
) -> None:
    env = {"POWERTOOLS_METRICS_NAMESPACE": "TravelBooking", "POWERTOOLS_SERVICE_NAME": "book-flight"}
    with mock.patch.dict(os.environ, env):
        handler = _build(observed, idempotency_table, raised)
        capsys.readouterr()
        with pytest.raises(surfaced):
            handler({"booking": "b-1"}, lambda_context)
    docs = [d for d in _emf_documents(capsys.readouterr().out) if EXPECTED_ERRORS_METRIC in d]
    values = [d[EXPECTED_ERRORS_METRIC] for d in docs]
    assert [v for value in values for v in (value if isinstance(value, list) else [value])] == counted
    for doc in docs:  # where the function's alarm reads it: its namespace, its service
        (directive,) = doc["_aws"]["CloudWatchMetrics"]
        assert directive["Namespace"] == "TravelBooking"
        assert doc["service"] == "book-flight" and ["service"] in [d[:1] for d in directive["Dimensions"]]


def test_step_handler_without_a_metric_namespace_is_refused_at_build(
    idempotency_table: str, observed: Observed
) -> None:
    """No namespace in the environment and no ``metrics=``: a clear configuration error when the module loads,
    never a count that silently goes nowhere (the alarm would page on every business outcome)."""
    env = {k: v for k, v in os.environ.items() if k != "POWERTOOLS_METRICS_NAMESPACE"}
    with (
        mock.patch.dict(os.environ, env, clear=True),
        pytest.raises(ConfigurationError, match="POWERTOOLS_METRICS_NAMESPACE"),
    ):
        _build(observed, idempotency_table, NoSeat("full"))
