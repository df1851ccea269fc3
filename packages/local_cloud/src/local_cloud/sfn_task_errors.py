"""Step Functions task errors named as AWS names them.

A Task state that calls Lambda, SQS or DynamoDB fails with the service's error under the service's
prefix, which is what a ``Retry`` or ``Catch`` matches:

- Lambda: "Lambda errors are reported as Lambda.<ErrorCode>" and "When Lambda hits the maximum number of
  invocations, the error is Lambda.TooManyRequestsException"; its 500s are ``Lambda.ServiceException``,
  ``Lambda.AWSLambdaException``, ``Lambda.SdkClientException``
  (https://docs.aws.amazon.com/step-functions/latest/dg/bp-lambda-serviceexception.html). Both task kinds:
  a function ARN as ``Resource`` (what CDK's ``LambdaInvoke`` renders with ``payloadResponseOnly``) and
  ``arn:aws:states:::lambda:invoke``.
- Every service: "the resulting Error field will be composed of the service name and error name, separated by
  a period: ServiceName.ErrorName", with the ``Exception`` suffix even where the service's own name lacks it
  (https://docs.aws.amazon.com/step-functions/latest/dg/supported-services-awssdk.html). The error name is the
  error's shape in the service's model (botocore's, which the AWS SDKs share); an error the model does not
  name is the SDK's base exception of the service (``Lambda.AWSLambdaException``, ``SQS.AmazonSQSException``,
  ``DynamoDB.AmazonDynamoDBException``), and no answer at all (a connection or read failure) is
  ``<Service>.SdkClientException``. For SQS, an execution recorded against AWS shows both
  (``SQS.AmazonSQSException`` for a refused SendMessage, ``SQS.SdkClientException`` for an unreachable queue:
  LocalStack's snapshot tests/aws/services/stepfunctions/v2/error_handling/test_task_service_sqs.snapshot.json).

What moto does instead (the canary checks it still does, else drop the patch): a function-ARN Lambda task names
every ``ClientError`` ``Exception`` (so a throttle escaped the saga's Retry on
``Lambda.TooManyRequestsException`` and cancelled valid orders), the SQS task names every ``ClientError``
``SQS.SdkClientException``, and a transport failure of any of them ``States.TaskFailed`` or the service's base
exception. A function's own error (``errorType`` in its payload) and a task's timeout keep moto's names.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

#: service -> (error prefix, the SDK's base exception, the service name a failure's cause quotes)
SERVICES: dict[str, tuple[str, str, str]] = {
    "lambda": ("Lambda", "AWSLambdaException", "AWSLambda"),
    "sqs": ("SQS", "AmazonSQSException", "AmazonSQS"),
    "dynamodb": ("DynamoDB", "AmazonDynamoDBException", "AmazonDynamoDBv2"),
}
#: No answer from the service (connection refused, reset, read timeout): the SDK's client-side exception.
SDK_CLIENT_EXCEPTION = "SdkClientException"


@functools.cache
def modeled_errors(service: str) -> frozenset[str]:
    """The error shapes of ``service``'s model (botocore's: the AWS SDKs' shared models)."""
    import botocore.session

    model = botocore.session.get_session().get_service_model(service)
    return frozenset(shape.name for shape in model.error_shapes)


def task_error_name(service: str, exc: BaseException) -> str | None:
    """The error a Task state calling ``service`` fails with for ``exc``; None: not a service error (moto's name)."""
    from botocore.exceptions import BotoCoreError, ClientError

    prefix, base, _ = SERVICES[service]
    if isinstance(exc, ClientError):
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if code not in modeled_errors(service):
            return f"{prefix}.{base}"
        return f"{prefix}.{code}" if code.endswith("Exception") else f"{prefix}.{code}Exception"
    if isinstance(exc, BotoCoreError):
        return f"{prefix}.{SDK_CLIENT_EXCEPTION}"
    return None


def task_error_cause(service: str, exc: BaseException) -> str:
    """The failure's cause as Step Functions quotes a service's answer (the message, then the answer's
    service, status, code and request ID), or the SDK's message when there was no answer."""
    from botocore.exceptions import ClientError

    if not isinstance(exc, ClientError):
        return f"Unable to execute HTTP request: {exc}"
    error, meta = exc.response.get("Error", {}), exc.response.get("ResponseMetadata", {})
    details = "; ".join(
        [
            f"Service: {SERVICES[service][2]}",
            f"Status Code: {meta.get('HTTPStatusCode')}",
            f"Error Code: {error.get('Code')}",
            f"Request ID: {meta.get('RequestId')}",
            "Proxy: null",
        ]
    )
    return f"{error.get('Message', '')} ({details})"


def _failure_event(task: Any, env: Any, service: str, name: str, exc: BaseException, function_arn: bool) -> Any:
    from moto.stepfunctions.parser.api import (
        HistoryEventType,
        LambdaFunctionFailedEventDetails,
        TaskFailedEventDetails,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import CustomErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import FailureEvent
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    cause = task_error_cause(service, exc)
    if function_arn:  # a function ARN as Resource: the Lambda* history events
        lambda_failed = LambdaFunctionFailedEventDetails(error=name, cause=cause)
        details: Any = EventDetails(lambdaFunctionFailedEventDetails=lambda_failed)  # type: ignore[typeddict-item]
        return FailureEvent(env, CustomErrorName(name), HistoryEventType.LambdaFunctionFailed, details)
    failed = TaskFailedEventDetails(
        error=name, cause=cause, resource=task._get_sfn_resource(), resourceType=task._get_sfn_resource_type()
    )
    details = EventDetails(taskFailedEventDetails=failed)  # type: ignore[typeddict-item]
    return FailureEvent(env, CustomErrorName(name), HistoryEventType.TaskFailed, details)


def _named(original: Any, service: str, function_arn: bool = False) -> Any:
    @functools.wraps(original)
    def from_error(self: Any, env: Any, ex: Exception) -> Any:
        name = task_error_name(service, ex)
        if name is None:
            return original(self, env, ex)
        return _failure_event(self, env, service, name, ex, function_arn)

    return from_error


def task_classes() -> list[tuple[type, str, bool]]:
    """(moto's task class, the service it calls, whether its Resource is a function ARN)."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_dynamodb import (
        StateTaskServiceDynamoDB,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_lambda import (
        StateTaskServiceLambda,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sqs import (
        StateTaskServiceSqs,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task_lambda import StateTaskLambda

    return [
        (StateTaskLambda, "lambda", True),
        (StateTaskServiceLambda, "lambda", False),
        (StateTaskServiceSqs, "sqs", False),
        (StateTaskServiceDynamoDB, "dynamodb", False),
    ]


@contextmanager
def aws_task_error_names() -> Iterator[None]:
    """While active, Lambda, SQS and DynamoDB Task states fail with the error names AWS gives them."""
    with ExitStack() as stack:
        for cls, service, function_arn in task_classes():
            original = cls.__dict__["_from_error"]
            stack.enter_context(mock.patch.object(cls, "_from_error", _named(original, service, function_arn)))
        yield
