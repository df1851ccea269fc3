"""StartExecution's ``traceHeader`` kept as AWS keeps it (moto drops it): the execution joins the caller's
X-Ray trace. Registered in :mod:`local_cloud.patches` (``sfn_trace_header``), applied by
:func:`local_cloud.environment.moto_behaviour`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

#: StartExecution's ``traceHeader``: at most 256 ASCII characters
#: (https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html).
TRACE_HEADER_MAX = 256


@contextmanager
def start_execution_trace_header() -> Iterator[None]:
    """moto's StartExecution drops ``traceHeader`` (and DescribeExecution does not answer it); AWS keeps
    it on the execution (DescribeExecution answers it, the execution joins that X-Ray trace). Passed to the
    parser backend, which stores it; a header over 256 characters or not ASCII is refused with
    ValidationException, as AWS does."""
    from moto.core.responses import ActionResult
    from moto.stepfunctions.exceptions import ValidationException
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
        mock.patch.object(StepFunctionResponse, "describe_execution", describe_execution),
    ):
        yield
