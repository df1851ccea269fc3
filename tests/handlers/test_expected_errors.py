"""The step middleware counts the failures a saga handles by design as ``ExpectedErrors`` (EMF):
business outcomes and transient failures, never a bug (docs/decisions/0020)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest
from botocore.exceptions import ClientError

from lambda_resilience.exceptions import TransientStepError, UnknownStepError
from lambda_resilience.step import DEPENDENCY_FAILURES_METRIC, EXPECTED_ERRORS_METRIC, TRANSIENT_FAILURES_METRIC
from order_domain.errors import (
    AttemptInProgress,
    InsufficientStock,
    InventoryContention,
    PaymentDeclined,
    PaymentIncomplete,
    ProviderInFlight,
    ProviderUnavailable,
    ShippingUnavailable,
)
from order_domain.step import build_step_handler


def _expected_errors(out: str, metric: str = EXPECTED_ERRORS_METRIC) -> list[float]:
    found = []
    for line in out.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict) and "_aws" in doc and metric in doc:
            value = doc[metric]
            found.extend(value if isinstance(value, list) else [value])
    return found


@pytest.fixture
def failing_step(
    pipeline_env: dict[str, str],
    saga_input: Any,
    order_factory: Any,
    lambda_context: Any,
    capsys: pytest.CaptureFixture[str],
) -> Callable[[Exception, type[Exception], str], str]:
    """Run a step (service ``name``) whose action raises ``raised``; assert it surfaces as ``surfaced``;
    return what the invocation printed (its log lines and EMF documents)."""

    def run(raised: Exception, surfaced: type[Exception], name: str) -> str:
        def action(payload: dict[str, Any]) -> dict[str, Any]:
            raise raised

        with mock.patch.dict(os.environ, {**pipeline_env, "POWERTOOLS_SERVICE_NAME": name}):
            handler = build_step_handler(name, lambda settings: action)
        capsys.readouterr()
        with pytest.raises(surfaced):
            handler(saga_input(order_factory()), lambda_context)
        return capsys.readouterr().out

    return run


@pytest.mark.parametrize(
    ("raised", "surfaced", "expected"),
    [
        (PaymentDeclined("declined"), PaymentDeclined, [1.0]),
        (InsufficientStock("none left"), InsufficientStock, [1.0]),
        (ShippingUnavailable("no route"), ShippingUnavailable, [1.0]),
        (PaymentIncomplete("partly captured"), PaymentIncomplete, [1.0]),
        (TimeoutError("provider timed out"), TransientStepError, [1.0]),
        (KeyError("bug"), UnknownStepError, []),
    ],
)
def test_expected_errors_counts_business_and_transient_only(
    raised: Exception,
    surfaced: type[Exception],
    expected: list[float],
    failing_step: Callable[[Exception, type[Exception], str], str],
) -> None:
    assert _expected_errors(failing_step(raised, surfaced, "counted-step")) == expected


@pytest.mark.parametrize(
    ("raised", "surfaced", "traceback"),
    [
        (PaymentDeclined("declined"), PaymentDeclined, False),
        (ShippingUnavailable("no route"), ShippingUnavailable, False),
        (TimeoutError("provider timed out"), TransientStepError, True),
        (KeyError("bug"), UnknownStepError, True),
    ],
)
def test_expected_errors_business_outcome_is_logged_without_a_traceback(
    raised: Exception,
    surfaced: type[Exception],
    traceback: bool,
    failing_step: Callable[[Exception, type[Exception], str], str],
) -> None:
    """A declined card is business: its ``failed`` line names the error and its category, without the
    stack trace (a third of the functions' log bytes in the business mix, decision 0022); a transient
    or unknown failure keeps its traceback."""

    name = f"logged-{type(raised).__name__.lower()}"  # a logger per case: Powertools keeps its first stream
    out = failing_step(raised, surfaced, name)
    lines = [json.loads(line) for line in out.splitlines() if f'"{name} failed"' in line]
    assert len(lines) == 1
    (line,) = lines
    assert line["level"] == "ERROR" and line["error_type"] == type(raised).__name__
    assert ("exception" in line) is traceback


@pytest.mark.parametrize(
    ("raised", "surfaced", "expected"),
    [
        (TimeoutError("provider timed out"), TransientStepError, [1.0]),
        (PaymentDeclined("declined"), PaymentDeclined, []),
        (KeyError("bug"), UnknownStepError, []),
    ],
)
def test_transient_failures_counted_for_the_provider_outage_alarm(
    raised: Exception,
    surfaced: type[Exception],
    expected: list[float],
    failing_step: Callable[[Exception, type[Exception], str], str],
) -> None:
    """A transient failure is expected (retried) yet counted on its own: a rate of them is an outage (0023)."""

    assert _expected_errors(failing_step(raised, surfaced, "counted-step"), TRANSIENT_FAILURES_METRIC) == expected


def _throttled() -> ClientError:
    return ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "UpdateItem")


@pytest.mark.parametrize(
    ("raised", "expected"),
    [
        (ProviderUnavailable("POST /charges: HTTP 503"), [1.0]),
        (ProviderInFlight("POST /charges: a request with this idempotency key is still in flight"), [1.0]),
        (_throttled(), []),  # the step's own DynamoDB call
        (AttemptInProgress("order changed while recording the attempt"), []),
        (InventoryContention("transaction cancelled (ThrottlingError)"), []),
    ],
)
def test_dependency_failures_count_the_providers_failures_only(
    raised: Exception, expected: list[float], failing_step: Callable[[Exception, type[Exception], str], str]
) -> None:
    """The provider outage alarms read DependencyFailures (issue 41): a provider's 5xx, timeout or in-flight answer
    counts; a throttled DynamoDB call or contention inside the same step is a transient failure, not the provider's."""
    out = failing_step(raised, TransientStepError, "counted-step")
    assert _expected_errors(out, DEPENDENCY_FAILURES_METRIC) == expected
    assert _expected_errors(out, TRANSIENT_FAILURES_METRIC) == [1.0]
