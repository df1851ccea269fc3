"""Errors the harness injects are shaped as AWS answers them: the service's modeled exception, its code,
its HTTP status and a request ID. Step Functions' service integrations quote the request ID in the
failure's cause; an injected error without one failed MarkCompensated with States.Runtime
(``KeyError('RequestId')``) where AWS would have raised a catchable ``DynamoDB.<code>``."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_dynamodb import (
    StateTaskServiceDynamoDB,
)

from harness.faults.cells import Rule
from harness.faults.inject import _outcome_write_hook
from harness.run.incidents import _orders_queue_failing
from local_cloud.template import REGION


@pytest.fixture
def dynamodb() -> Any:
    return boto3.client("dynamodb", region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing")


def _mark_compensated(order_id: str) -> dict[str, Any]:
    """The parameters of the saga's MarkCompensated UpdateItem (what Step Functions' client sends)."""
    return {
        "TableName": "orders",
        "Key": {"order_id": {"S": order_id}},
        "UpdateExpression": "SET #s = :to",
        "ExpressionAttributeNames": {"#s": "status"},
        "ExpressionAttributeValues": {":to": {"S": "COMPENSATED"}},
    }


@pytest.mark.parametrize("code", ["ProvisionedThroughputExceededException", "ConditionalCheckFailedException"])
def test_outcome_write_hook_fails_as_dynamodb_does_so_step_functions_can_catch_it(dynamodb: Any, code: str) -> None:
    plan = SimpleNamespace(
        applies=lambda order_id: True,
        current_state=lambda order_id: "MarkCompensated",
        fire=lambda order_id, state, kinds: Rule(state, "outcome_write", code),
    )

    def never_sent(*args: Any) -> Any:
        raise AssertionError("the injected error is answered before the call leaves")

    hook = _outcome_write_hook(plan, never_sent)  # type: ignore[arg-type]
    with pytest.raises(dynamodb.exceptions.from_code(code)) as raised:
        hook(dynamodb, "UpdateItem", _mark_compensated("o-1"))

    response = raised.value.response
    assert response["ResponseMetadata"]["RequestId"]
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 400
    error, cause = StateTaskServiceDynamoDB._error_cause_from_client_error(raised.value)
    assert error == f"DynamoDB.{code}"
    assert "Request ID: " in cause and "injected" in cause


def test_orders_queue_incident_fails_send_message_as_sqs_does() -> None:
    sqs = boto3.client("sqs", region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing")
    url = f"https://sqs.{REGION}.amazonaws.com/123456789012/orders"
    with _orders_queue_failing("orders"), pytest.raises(sqs.exceptions.ClientError) as raised:
        sqs.send_message(QueueUrl=url, MessageBody="{}")

    response = raised.value.response
    assert response["Error"]["Code"] == "InternalError"
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 500
    assert response["ResponseMetadata"]["RequestId"]
