"""StartExecution's ``traceHeader`` kept as AWS keeps it (moto drops it): the execution joins the caller's
X-Ray trace, and its Lambda tasks' invocations get that trace (Lambda's X-Ray header, which AWS's
OpenTelemetry layer parents its invocation span on: :mod:`local_cloud.otel_layer`). Registered in
:mod:`local_cloud.patches` (``sfn_trace_header``, ``sfn_task_trace_header``), applied by
:func:`local_cloud.environment.moto_behaviour`."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

#: StartExecution's ``traceHeader``: at most 256 ASCII characters
#: (https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html).
TRACE_HEADER_MAX = 256
#: Execution ARN -> the ``traceHeader`` it was started with (the header of its Lambda tasks' invocations).
_started: dict[str, str] = {}


@contextmanager
def start_execution_trace_header() -> Iterator[None]:
    """moto's StartExecution drops ``traceHeader`` (and DescribeExecution does not answer it); AWS keeps
    it on the execution (DescribeExecution answers it, the execution joins that X-Ray trace). Passed to the
    parser backend, which stores it; a header over 256 characters or not ASCII is refused with
    ValidationException, as AWS does."""
    from moto.core.responses import ActionResult
    from moto.stepfunctions.exceptions import ValidationException
    from moto.stepfunctions.parser.backend.execution import Execution
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend
    from moto.stepfunctions.responses import StepFunctionResponse

    original = StepFunctionResponse.start_execution

    def start_execution(self: Any) -> Any:
        header = self._get_param("traceHeader")
        backend = self.stepfunction_backend
        if header is None or not isinstance(backend, StepFunctionsParserBackend):
            return original(self)
        if len(header) > TRACE_HEADER_MAX or not header.isascii():
            raise ValidationException("traceHeader: at most 256 ASCII characters")
        execution = backend.start_execution(
            self._get_param("stateMachineArn"),
            self._get_param("name"),
            self._get_param("input", if_none="{}"),
            trace_header=header,
        )
        return ActionResult({"executionArn": execution.execution_arn, "startDate": execution.start_date})

    original_start = Execution.start

    def start(self: Any) -> None:
        # Registered before the execution's thread starts: its first task may run before
        # StartExecution returns (registering after it raced the first Lambda task's invocation).
        if self.trace_header:
            _started[self.exec_arn] = self.trace_header
        original_start(self)

    original_describe = StepFunctionResponse.describe_execution

    def describe_execution(self: Any) -> Any:
        result = original_describe(self)
        execution = self.stepfunction_backend.describe_execution(self._get_param("executionArn"))
        header = getattr(execution, "trace_header", None)
        if header and isinstance(result.result, dict):
            return ActionResult({**result.result, "traceHeader": header})
        return result

    with (
        mock.patch.object(StepFunctionResponse, "start_execution", start_execution),
        mock.patch.object(Execution, "start", start),
        mock.patch.object(StepFunctionResponse, "describe_execution", describe_execution),
    ):
        yield


#: The X-Ray trace header of the Lambda task invocation running on this thread (None outside one).
_task_header = threading.local()


def task_trace_header() -> str | None:
    """The X-Ray header a Lambda task's invocation gets on AWS: the execution's (Step Functions passes its
    trace to the functions it invokes). None outside an execution, or for one started without a header."""
    return getattr(_task_header, "value", None)


@contextmanager
def execution_trace_header_to_tasks() -> Iterator[None]:
    """A Lambda task's invocation carries its execution's ``traceHeader`` (:func:`task_trace_header`), as
    on AWS; moto passes none. The emulator records no Step Functions segment of its own, so the header's
    Parent stays the execution's. Both of moto's Lambda task kinds (the ``lambda:invoke`` integration and
    a function ARN as Resource) call ``execute_lambda_function_integration`` on the task's thread."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils

    original = lambda_eval_utils.execute_lambda_function_integration

    def execute(env: Any, *args: Any, **kwargs: Any) -> Any:
        execution = env.states.context_object.context_object_data["Execution"]["Id"]
        previous = task_trace_header()
        _task_header.value = _started.get(execution)
        try:
            return original(env, *args, **kwargs)
        finally:
            _task_header.value = previous

    with mock.patch.object(lambda_eval_utils, "execute_lambda_function_integration", execute):
        yield
