"""Synth-time checks that the library's defaults fit the step middleware (part of ``ResilienceChecks``).

A function is **on the step middleware** when its errors alarm subtracts ``ExpectedErrors``
(``Errors - FILL(ExpectedErrors, 0)``: what :class:`constructs_lib.function.PipelineFunction` and
:class:`constructs_lib.alarms.FunctionAlarms` with ``expected_errors`` build). That alarm is the one place
a function says so at synth time; a function not on the middleware says it by an alarm on plain ``Errors``
(``FunctionAlarms`` without ``expected_errors``). Two checks follow:

- **A metric nothing emits.** The middleware (``lambda_resilience.step.step_handler``) emits ``ExpectedErrors``
  under the function's ``POWERTOOLS_METRICS_NAMESPACE`` with the dimension ``service`` =
  ``POWERTOOLS_SERVICE_NAME``. An alarm that reads it under another namespace or service (or a function
  without those variables) never sees a business outcome subtracted: every declined card pages.
- **Retries that miss what the handler raises.** The middleware raises every transient failure as
  ``TransientStepError`` and an unexpected one as ``UnknownStepError``; a Step Functions task invoking such
  a function must retry both (or ``States.ALL`` / ``States.TaskFailed``, which match every error name but
  ``States.Timeout``: https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html),
  else a throttled call in a step goes straight to the catch-all and compensates.

Each finding is an error annotation on the offending resource, naming the fix.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from aws_cdk import Annotations, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn

from constructs_lib.alarms import EXPECTED_ERRORS_METRIC
from constructs_lib.cfn_reads import alarm_metrics, get, ref_target
from constructs_lib.generic_saga import MIDDLEWARE_STEP_ERRORS

EXPECTED_ERRORS_NOT_EMITTED = "ResilienceChecks: the errors alarm subtracts an ExpectedErrors that nothing emits"
RETRIES_MISS_STEP_ERRORS = "ResilienceChecks: a task's retries miss the errors its step middleware raises"
#: Retry error names that match every Lambda function error (the docs' wildcards, but for States.Timeout).
WILDCARDS = ("States.ALL", "States.TaskFailed")
NAMESPACE_VAR = "POWERTOOLS_METRICS_NAMESPACE"
SERVICE_VAR = "POWERTOOLS_SERVICE_NAME"
_TOKEN = re.compile(r"<<([^>]*)>>")
_LAMBDA_INVOKE = ":states:::lambda:invoke"


def _expected_errors_reads(stack: Stack, alarm: cloudwatch.CfnAlarm) -> tuple[str | None, list[Any]]:
    """(function logical ID, ExpectedErrors metrics) of an alarm on a function's Errors minus ExpectedErrors."""
    function_id: str | None = None
    expected: list[Any] = []
    for metric in alarm_metrics(stack, alarm):
        if (metric["namespace"], metric["metric_name"]) == ("AWS/Lambda", "Errors"):
            for dim in metric["dimensions"] or []:
                if get(dim, "name") == "FunctionName":
                    function_id = ref_target(get(dim, "value"))
        elif metric["metric_name"] == EXPECTED_ERRORS_METRIC:
            expected.append(metric)
    return function_id, expected


def middleware_functions(stack: Stack, alarms: list[cloudwatch.CfnAlarm]) -> dict[str, list[Any]]:
    """Logical IDs of the functions whose errors alarm subtracts ExpectedErrors, with those metrics."""
    found: dict[str, list[Any]] = {}
    for alarm in alarms:
        function_id, expected = _expected_errors_reads(stack, alarm)
        if function_id is not None and expected:
            found.setdefault(function_id, []).extend(expected)
    return found


def _variables(stack: Stack, function: lambda_.CfnFunction) -> dict[str, Any]:
    # The L2 function renders its variables lazily: the L1 ``environment`` property reads empty before
    # synthesis, its properties (``_cfn_properties``, what the template is rendered from) hold them.
    environment = get(stack.resolve(function._cfn_properties), "environment") or {}
    return dict(get(environment, "variables") or {})


def _check_emitted(stack: Stack, function: lambda_.CfnFunction, expected: list[Any]) -> None:
    variables = _variables(stack, function)
    for metric in expected:
        services = [get(d, "value") for d in metric["dimensions"] or [] if get(d, "name") == "service"]
        wanted = {NAMESPACE_VAR: metric["namespace"], **({SERVICE_VAR: services[0]} if services else {})}
        if not all(isinstance(v, str) for v in wanted.values()):
            continue  # a token: nothing to compare before deployment
        if services and all(variables.get(k) == v for k, v in wanted.items()):
            continue
        have = ", ".join(f"{k}={variables.get(k)!r}" for k in (NAMESPACE_VAR, SERVICE_VAR))
        want = " and ".join(f"{k}={v}" for k, v in wanted.items())
        Annotations.of(function).add_error(
            f"{EXPECTED_ERRORS_NOT_EMITTED}: the step middleware emits it under the function's {NAMESPACE_VAR} and "
            f"{SERVICE_VAR} (here {have}); set {want} in the function's environment (PipelineFunction does), "
            "or, for a handler not on the step middleware, alarm on its plain Errors (FunctionAlarms without "
            "expected_errors)"
        )


def _definition(stack: Stack, machine: sfn.CfnStateMachine) -> dict[str, Any] | None:
    """The ASL with each reference written ``<<LogicalId>>``; None when it cannot be read before deployment."""
    raw = stack.resolve(machine.definition_string)
    if isinstance(raw, dict) and "Fn::Join" in raw:
        sep, parts = raw["Fn::Join"]
        raw = sep.join(p if isinstance(p, str) else f"<<{ref_target(p) or ''}>>" for p in parts)
    if not isinstance(raw, str):
        return None
    try:
        parsed = json.loads(raw)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _task_states(definition: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every state of the definition, branches and map iterations included, by name."""
    for name, state in (definition.get("States") or {}).items():
        yield name, state
        for branch in state.get("Branches") or []:
            yield from _task_states(branch)
        for key in ("Iterator", "ItemProcessor"):
            if isinstance(state.get(key), dict):
                yield from _task_states(state[key])


def _invoked_function(state: dict[str, Any]) -> str | None:
    """Logical ID of the function a Lambda task invokes (its ARN as Resource, or ``lambda:invoke``)."""
    if state.get("Type") != "Task":
        return None
    resource = str(state.get("Resource", ""))
    target = (
        str((state.get("Parameters") or {}).get("FunctionName", "")) if resource.endswith(_LAMBDA_INVOKE) else resource
    )
    match = _TOKEN.match(target)
    return match.group(1) if match else None


def _check_retries(stack: Stack, machine: sfn.CfnStateMachine, middleware: set[str]) -> None:
    definition = _definition(stack, machine)
    if definition is None:
        return
    for name, state in _task_states(definition):
        if _invoked_function(state) not in middleware:
            continue
        retried = {error for retrier in state.get("Retry") or [] for error in retrier.get("ErrorEquals") or []}
        missing = [e for e in MIDDLEWARE_STEP_ERRORS if e not in retried]
        if missing and not retried.intersection(WILDCARDS):
            Annotations.of(machine).add_error(
                f"{RETRIES_MISS_STEP_ERRORS}: state {name!r} invokes a function on the step middleware (its alarm "
                f"subtracts ExpectedErrors) and does not retry {', '.join(missing)}; add them to its Retry (the "
                "generic_saga: keep the default SagaProps.retry_on or include MIDDLEWARE_STEP_ERRORS in yours), or, "
                "for a handler not on the step middleware, alarm on its plain Errors"
            )


def check_middleware_defaults(
    stack: Stack,
    functions: dict[str, lambda_.CfnFunction],
    alarms: list[cloudwatch.CfnAlarm],
    machines: dict[str, sfn.CfnStateMachine],
) -> None:
    """Both checks of the module docstring over one stack's functions, alarms and state machines."""
    middleware = middleware_functions(stack, alarms)
    for function_id, expected in middleware.items():
        if function_id in functions:
            _check_emitted(stack, functions[function_id], expected)
    for machine in machines.values():
        _check_retries(stack, machine, set(middleware))
