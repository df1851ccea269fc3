"""Step Functions task errors named as AWS names them (local_cloud.sfn_task_errors), against moto's interpreter."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from moto import mock_aws

from local_cloud.clock import SimClock
from local_cloud.faults import throttle_dynamodb
from local_cloud.lambda_runtime import LocalFunction, route_invocations
from local_cloud.limits import Quotas
from local_cloud.limits_enforce import LimitEnforcer, enforce_limits
from local_cloud.sfn_task_errors import aws_task_error_names, task_error_name
from local_cloud.template import REGION


def _client_error(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": {"HTTPStatusCode": 400}}, "Op")


@pytest.mark.parametrize(
    ("service", "code", "name"),
    [
        ("lambda", "TooManyRequestsException", "Lambda.TooManyRequestsException"),
        ("lambda", "ServiceException", "Lambda.ServiceException"),
        ("lambda", "SomethingUnmodeled", "Lambda.AWSLambdaException"),
        ("sqs", "QueueDoesNotExist", "SQS.QueueDoesNotExistException"),
        ("sqs", "RequestThrottled", "SQS.RequestThrottledException"),
        ("sqs", "MissingParameter", "SQS.AmazonSQSException"),
        ("dynamodb", "ConditionalCheckFailedException", "DynamoDB.ConditionalCheckFailedException"),
        ("dynamodb", "ProvisionedThroughputExceededException", "DynamoDB.ProvisionedThroughputExceededException"),
        ("dynamodb", "RequestLimitExceeded", "DynamoDB.RequestLimitExceededException"),
        ("dynamodb", "InternalServerError", "DynamoDB.InternalServerErrorException"),
        ("dynamodb", "SomethingUnmodeled", "DynamoDB.AmazonDynamoDBException"),
    ],
)
def test_task_error_name_service_answer_is_service_dot_shape_exception(service: str, code: str, name: str) -> None:
    assert task_error_name(service, _client_error(code)) == name


@pytest.mark.parametrize(("service", "prefix"), [("lambda", "Lambda"), ("sqs", "SQS"), ("dynamodb", "DynamoDB")])
def test_task_error_name_no_answer_is_sdk_client_exception(service: str, prefix: str) -> None:
    assert task_error_name(service, EndpointConnectionError(endpoint_url="https://x")) == f"{prefix}.SdkClientException"
    assert task_error_name(service, ValueError("a function's own error")) is None  # moto's name stays


# -- executions in moto ---------------------------------------------------------------------------------
@pytest.fixture
def sfn_env(tmp_path: Path) -> Iterator[dict[str, Any]]:
    (tmp_path / "h.py").write_text("def handler(event, context):\n    return {'ok': 1}\n")
    fn = LocalFunction("Fn", "local-fn", tmp_path, "h.handler", {}, 3.0, 128, [], SimClock())
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}), route_invocations({"local-fn": fn}):
        role = boto3.client("iam").create_role(RoleName="r", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        arn = boto3.client("lambda", region_name=REGION).create_function(
            FunctionName="local-fn", Runtime="python3.12", Role=role, Handler="h.handler", Code={"ZipFile": b"PK"}
        )["FunctionArn"]
        ddb = boto3.client("dynamodb", region_name=REGION)
        ddb.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield {"role": role, "function_arn": arn, "clock": fn.clock}


def execution_error(env: dict[str, Any], task: dict[str, Any], name: str) -> str | None:
    """Run a one-task state machine to its end: the execution's error."""
    sfn = boto3.client("stepfunctions", region_name=REGION)
    definition = json.dumps({"StartAt": "T", "States": {"T": {"Type": "Task", **task, "End": True}}})
    machine = sfn.create_state_machine(name=name, definition=definition, roleArn=env["role"])["stateMachineArn"]
    execution = sfn.start_execution(stateMachineArn=machine, name=name)["executionArn"]
    deadline = time.monotonic() + 20
    while (described := sfn.describe_execution(executionArn=execution))["status"] == "RUNNING":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return described.get("error")


def _throttled_lambda_tasks(env: dict[str, Any]) -> list[dict[str, Any]]:
    service = {"Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName": env["function_arn"]}}
    return [{"Resource": env["function_arn"]}, service]


def test_task_error_throttled_lambda_task_is_too_many_requests_in_both_task_kinds(sfn_env: dict[str, Any]) -> None:
    with enforce_limits(LimitEnforcer(Quotas(lambda_concurrency=0), sfn_env["clock"])):
        function_arn, service = _throttled_lambda_tasks(sfn_env)
        assert execution_error(sfn_env, function_arn, "moto-arn") == "Exception"  # moto's name (canary)
        with aws_task_error_names():
            assert execution_error(sfn_env, function_arn, "arn") == "Lambda.TooManyRequestsException"
            assert execution_error(sfn_env, service, "service") == "Lambda.TooManyRequestsException"


def test_task_error_dynamodb_condition_and_throttle_are_named(sfn_env: dict[str, Any]) -> None:
    put = {
        "Resource": "arn:aws:states:::dynamodb:putItem",
        "Parameters": {"TableName": "t", "Item": {"pk": {"S": "a"}}, "ConditionExpression": "attribute_exists(pk)"},
    }
    with aws_task_error_names():
        assert execution_error(sfn_env, put, "condition") == "DynamoDB.ConditionalCheckFailedException"
        with throttle_dynamodb(lambda *_: True):
            assert execution_error(sfn_env, put, "throttle") == "DynamoDB.ProvisionedThroughputExceededException"


def test_task_error_sqs_refusal_is_amazon_sqs_exception_not_sdk_client(sfn_env: dict[str, Any]) -> None:
    url = boto3.client("sqs", region_name=REGION).create_queue(QueueName="q")["QueueUrl"]
    send = {
        "Resource": "arn:aws:states:::sqs:sendMessage",
        "Parameters": {"QueueUrl": url, "MessageBody": "x", "DelaySeconds": 901},  # over SQS's 900 s maximum
    }
    assert execution_error(sfn_env, send, "moto-sqs") == "SQS.SdkClientException"  # moto's name (canary)
    with aws_task_error_names():
        assert execution_error(sfn_env, send, "sqs") == "SQS.AmazonSQSException"


def test_task_error_names_restore_moto_on_exit() -> None:
    from local_cloud.sfn_task_errors import task_classes

    before = [cls.__dict__["_from_error"] for cls, _, _ in task_classes()]
    with ExitStack() as stack:
        stack.enter_context(aws_task_error_names())
        assert [cls.__dict__["_from_error"] for cls, _, _ in task_classes()] != before
    assert [cls.__dict__["_from_error"] for cls, _, _ in task_classes()] == before
