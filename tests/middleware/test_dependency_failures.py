"""The step middleware counts the transient failures of what a step calls outside AWS (a partner's API) on their
own, as ``DependencyFailures``: an outage alarm on it reads the dependency's trouble, never the step's own
throttled DynamoDB calls or an idempotency record left in progress by a crash (which stay ``TransientFailures``)."""

from __future__ import annotations

import json
import os
from typing import Any
from unittest import mock

import pytest
from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import ClientError

from lambda_resilience.exceptions import (
    DependencyUnavailable,
    OperationInProgress,
    TransientStepError,
    UnknownStepError,
)
from lambda_resilience.idempotency import IdempotentOperation
from lambda_resilience.step import (
    DEPENDENCY_FAILURES_METRIC,
    FIRST_CALL_FAILURES_METRIC,
    FIRST_CALLS_METRIC,
    TRANSIENT_FAILURES_METRIC,
    StepInput,
    first_call,
    step_handler,
)

from .conftest import Observed

ENV = {"POWERTOOLS_METRICS_NAMESPACE": "TravelBooking", "POWERTOOLS_SERVICE_NAME": "book-flight"}


class AirlineDown(DependencyUnavailable):
    """A team's dependency error: the airline's booking API answered 503."""


def _throttled() -> ClientError:
    error = {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"}}
    return ClientError(error, "PutItem")


def _wrapped_dependency() -> TransientStepError:
    try:
        raise AirlineDown("HTTP 503")
    except AirlineDown as exc:
        try:
            raise TransientStepError("booking failed") from exc
        except TransientStepError as wrapped:
            return wrapped


def _counts(
    out: str, names: tuple[str, ...] = (TRANSIENT_FAILURES_METRIC, DEPENDENCY_FAILURES_METRIC)
) -> dict[str, list[float]]:
    """Each metric's values in the EMF documents ``out`` holds, with the dimensions they were published under."""
    counts: dict[str, list[float]] = {name: [] for name in names}
    for line in out.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if not (isinstance(doc, dict) and "_aws" in doc):
            continue
        (directive,) = doc["_aws"]["CloudWatchMetrics"]
        for name, values in counts.items():
            if name in doc:
                assert directive["Namespace"] == "TravelBooking" and doc["service"] == "book-flight"
                values.extend(doc[name] if isinstance(doc[name], list) else [doc[name]])
    return counts


def _parse(event: Any) -> StepInput:
    return StepInput(idempotency_key=f"{event['booking']}#book-flight", payload={"booking": event["booking"]})


@pytest.mark.parametrize(
    ("raised", "surfaced", "transient", "dependency"),
    [
        (AirlineDown("HTTP 503"), TransientStepError, [1.0], [1.0]),
        (_wrapped_dependency(), TransientStepError, [1.0], [1.0]),  # its cause is the dependency's failure
        (_throttled(), TransientStepError, [1.0], []),  # the step's own DynamoDB call: not the dependency
        (OperationInProgress("held by a crashed invocation"), TransientStepError, [1.0], []),
        (TimeoutError("read timed out"), TransientStepError, [1.0], []),  # unmarked: whose timeout is unknown
        (KeyError("bug"), UnknownStepError, [], []),
    ],
)
def test_step_handler_counts_dependency_failures_apart_from_other_transient_failures(
    idempotency_table: str,
    observed: Observed,
    lambda_context: LambdaContext,
    capsys: pytest.CaptureFixture[str],
    raised: Exception,
    surfaced: type[Exception],
    transient: list[float],
    dependency: list[float],
) -> None:
    def book(payload: dict[str, Any]) -> dict[str, Any]:
        raise raised

    with mock.patch.dict(os.environ, ENV):
        idempotent = IdempotentOperation(idempotency_table, ttl_seconds=3600, logger=observed.logger)
        handler = step_handler("book-flight", book, parse=_parse, idempotent=idempotent, logger=observed.logger)
        capsys.readouterr()
        with pytest.raises(surfaced):
            handler({"booking": "b-1"}, lambda_context)
    counts = _counts(capsys.readouterr().out)
    assert counts == {TRANSIENT_FAILURES_METRIC: transient, DEPENDENCY_FAILURES_METRIC: dependency}


def test_dependency_unavailable_is_transient() -> None:
    """A dependency's failure is retried like any transient one (the category every handler routes by)."""
    from lambda_resilience.classification import TRANSIENT, classify

    assert classify(AirlineDown("HTTP 503")) == TRANSIENT


def test_step_handler_counts_a_dependency_failure_once_per_operation_at_its_first_call(
    idempotency_table: str, observed: Observed, lambda_context: LambdaContext, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 41: a booking the airline refuses on every retry is one operation refused, not an outage. The action
    says which invocation makes the operation's first call (its own record, e.g. an intent newly written):
    ``DependencyFirstCalls`` and ``DependencyFirstCallFailures`` count that invocation only, whatever the retries."""
    sent: list[str] = []

    def book(payload: dict[str, Any]) -> dict[str, Any]:
        if payload["booking"] not in sent:  # the application's own record says: never sent before
            first_call()
        sent.append(payload["booking"])
        if payload["booking"] == "refused":
            raise AirlineDown("HTTP 503")
        return {"booked": payload["booking"]}

    names = (DEPENDENCY_FAILURES_METRIC, FIRST_CALLS_METRIC, FIRST_CALL_FAILURES_METRIC)
    with mock.patch.dict(os.environ, ENV):
        idempotent = IdempotentOperation(idempotency_table, ttl_seconds=3600, logger=observed.logger)
        handler = step_handler("book-flight", book, parse=_parse, idempotent=idempotent, logger=observed.logger)
        capsys.readouterr()
        for _ in range(6):  # the first call and five retries, each refused
            with pytest.raises(TransientStepError):
                handler({"booking": "refused"}, lambda_context)
        assert _counts(capsys.readouterr().out, names) == {
            DEPENDENCY_FAILURES_METRIC: [1.0] * 6,  # every failed invocation, as before
            FIRST_CALLS_METRIC: [1.0],
            FIRST_CALL_FAILURES_METRIC: [1.0],
        }
        handler({"booking": "ok"}, lambda_context)
        handler({"booking": "ok"}, lambda_context)  # a duplicate: answered from the idempotency record
    assert _counts(capsys.readouterr().out, names) == {
        DEPENDENCY_FAILURES_METRIC: [],
        FIRST_CALLS_METRIC: [1.0],
        FIRST_CALL_FAILURES_METRIC: [],
    }
