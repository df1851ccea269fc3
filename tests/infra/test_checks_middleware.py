"""ResilienceChecks on the defaults that must fit together (issue 42): an ``Errors - ExpectedErrors`` alarm
whose ``ExpectedErrors`` nothing emits, and a saga task whose retries miss what its step middleware raises."""

from __future__ import annotations

import re

from aws_cdk import Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Annotations, Match

from constructs_lib.alarms import FunctionAlarms, FunctionAlarmsProps, expected_errors_metric
from constructs_lib.checks_middleware import EXPECTED_ERRORS_NOT_EMITTED, RETRIES_MISS_STEP_ERRORS
from constructs_lib.generic_saga import LAMBDA_SERVICE_ERRORS, LambdaTask, Saga, SagaProps, SagaStep
from tests.infra.conftest import inline_function_in

STACK = "/ChecksUnderTest"
MIDDLEWARE_ENV = {"POWERTOOLS_METRICS_NAMESPACE": "TravelBooking", "POWERTOOLS_SERVICE_NAME": "book-flight"}


def _errors(stack: Stack, message: str) -> list[str]:
    found = Annotations.from_stack(stack).find_error("*", Match.string_like_regexp(re.escape(message)))
    return [str(f.entry.data) for f in found]


def _step_function(stack: Stack, env: dict[str, str] | None, *, expected: bool = True) -> lambda_.Function:
    """A function with the alarm the library gives a step-middleware function (``Errors - ExpectedErrors``),
    or, with ``expected=False``, the plain ``Errors`` alarm of a function that is not on the middleware."""
    fn = inline_function_in(stack, "BookFlight", environment=env)
    FunctionAlarms(
        stack,
        "BookFlightAlarms",
        props=FunctionAlarmsProps(
            function=fn,
            alarm_topic=sns.Topic(stack, "Topic"),
            expected_errors=expected_errors_metric("TravelBooking", "book-flight") if expected else None,
        ),
    )
    return fn


def test_checks_expected_errors_alarm_without_an_emitter_names_the_fix(checked_stack: Stack) -> None:
    _step_function(checked_stack, env=None)
    (message,) = _errors(checked_stack, EXPECTED_ERRORS_NOT_EMITTED)
    assert "POWERTOOLS_METRICS_NAMESPACE=TravelBooking" in message
    assert "POWERTOOLS_SERVICE_NAME=book-flight" in message


def test_checks_expected_errors_alarm_on_another_service_is_refused(checked_stack: Stack) -> None:
    _step_function(checked_stack, env={**MIDDLEWARE_ENV, "POWERTOOLS_SERVICE_NAME": "book-hotel"})
    (message,) = _errors(checked_stack, EXPECTED_ERRORS_NOT_EMITTED)
    assert "POWERTOOLS_SERVICE_NAME=book-flight" in message and "book-hotel" in message


def test_checks_expected_errors_alarm_read_where_the_middleware_emits_passes(checked_stack: Stack) -> None:
    _step_function(checked_stack, env=MIDDLEWARE_ENV)
    assert _errors(checked_stack, EXPECTED_ERRORS_NOT_EMITTED) == []


def test_checks_saga_task_retries_missing_the_step_errors_names_the_fix(checked_stack: Stack) -> None:
    fn = _step_function(checked_stack, env=MIDDLEWARE_ENV)
    steps = [SagaStep("BookFlight", LambdaTask(fn))]
    Saga(checked_stack, "Saga", props=SagaProps(steps=steps, retry_on=LAMBDA_SERVICE_ERRORS))
    (message,) = _errors(checked_stack, RETRIES_MISS_STEP_ERRORS)
    assert "BookFlight" in message and "TransientStepError" in message and "UnknownStepError" in message


def test_checks_saga_task_with_default_retries_passes(checked_stack: Stack) -> None:
    fn = _step_function(checked_stack, env=MIDDLEWARE_ENV)
    Saga(checked_stack, "Saga", props=SagaProps(steps=[SagaStep("BookFlight", LambdaTask(fn))]))
    assert _errors(checked_stack, RETRIES_MISS_STEP_ERRORS) == []


def test_checks_saga_task_of_a_function_off_the_middleware_needs_no_step_errors(checked_stack: Stack) -> None:
    """A function whose alarm is plain ``Errors`` (it said it is not on the middleware) raises no step errors."""
    fn = _step_function(checked_stack, env=None, expected=False)
    steps = [SagaStep("BookFlight", LambdaTask(fn))]
    Saga(checked_stack, "Saga", props=SagaProps(steps=steps, retry_on=LAMBDA_SERVICE_ERRORS))
    assert _errors(checked_stack, RETRIES_MISS_STEP_ERRORS) == []
    assert _errors(checked_stack, EXPECTED_ERRORS_NOT_EMITTED) == []
