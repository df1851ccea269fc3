"""The order saga's direct service integrations: the conditional status writes on the orders table
(the outcome recorders) and the last resort's SQS SendMessage to the needs-attention queue."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from constructs_lib.generic_saga import DYNAMODB_TRANSIENT_ERRORS, ServiceTask

#: Errors of the last resort's direct SQS integration worth retrying: Step Functions names an
#: optimized integration's errors ``SQS.<exception>`` (``SQS.AmazonSQSException`` for a service
#: error, ``SQS.SdkClientException`` for a client-side one), and ``States.Timeout`` for its TimeoutSeconds.
#: https://docs.aws.amazon.com/step-functions/latest/dg/connect-sqs.html
SQS_SEND_RETRY_ERRORS: tuple[str, ...] = (
    "SQS.AmazonSQSException",
    "SQS.SdkClientException",
    "SQS.RequestThrottledException",  # ServiceName.ErrorName with the Exception suffix (supported-services-awssdk)
    "SQS.KmsThrottledException",
    "States.Timeout",
)

#: The needs-attention message's ``source`` when the state machine sends it itself (the park failed).
LAST_RESORT_SOURCE = "saga-last-resort"


def status_write(table: dynamodb.ITable, status: str, sources: Sequence[str]) -> ServiceTask:
    """A conditional UpdateItem that moves the order to ``status``, only from ``sources`` and only
    for the execution's payment attempt, appending a history entry with the correlation ID.

    A repeat (the order already has ``status``), a late write (the order is past it) and a newer
    attempt all fail the condition: nothing is overwritten (``DynamoDB.ConditionalCheckFailedException``).
    """
    if not sources:
        raise ValueError(f"{status}: at least one source status is needed")
    value = tasks.DynamoAttributeValue
    entry = value.from_map(
        {
            "status": value.from_string(status),
            "at": value.from_string(sfn.JsonPath.string_at("$$.State.EnteredTime")),
            "attempt": value.number_from_string(
                sfn.JsonPath.json_to_string(sfn.JsonPath.number_at("$.payment_attempt"))
            ),
            "correlation_id": value.from_string(sfn.JsonPath.string_at("$.correlation_id")),
        }
    )
    values: dict[str, tasks.DynamoAttributeValue] = {
        ":to": value.from_string(status),
        ":now": value.from_string(sfn.JsonPath.string_at("$$.State.EnteredTime")),
        ":entry": value.from_list([entry]),
        ":attempt": value.number_from_string(sfn.JsonPath.json_to_string(sfn.JsonPath.number_at("$.payment_attempt"))),
    }
    placeholders = []
    for i, source in enumerate(sources):
        values[f":f{i}"] = value.from_string(source)
        placeholders.append(f":f{i}")
    # Items written before payment attempts existed have no payment_attempt: they are attempt 1.
    condition = (
        f"attribute_exists(order_id) AND #s IN ({', '.join(placeholders)}) "
        "AND (attribute_not_exists(payment_attempt) OR payment_attempt = :attempt)"
    )

    def build(scope: Construct, state_id: str, *, result_path: str, task_timeout: sfn.Timeout) -> Any:
        return tasks.DynamoUpdateItem(
            scope,
            state_id,
            table=table,
            key={"order_id": value.from_string(sfn.JsonPath.string_at("$.order_id"))},
            update_expression="SET #s = :to, #u = :now, #h = list_append(#h, :entry)",
            condition_expression=condition,
            expression_attribute_names={"#s": "status", "#u": "updated_at", "#h": "history"},
            expression_attribute_values=values,
            result_selector={"status": status},
            result_path=result_path,
            task_timeout=task_timeout,
        )

    return ServiceTask(build, timeout=Duration.seconds(10), retry_on=DYNAMODB_TRANSIENT_ERRORS)


def last_resort(queue: sqs.IQueue, error_path: str) -> ServiceTask:
    """A direct SQS SendMessage of the order's references and the park's error to the needs-attention
    queue, with the ``correlation_id`` message attribute (the body of every needs-attention message:
    ``order_id, payment_attempt, correlation_id, reason, error, source``; no customer data).

    A ``CustomState``: ``tasks.SqsSendMessage`` has no ``MessageAttributes`` prop, and the queue's
    consumers (and the repair tool) find the correlation ID there, as on every other message.
    Parameters of the integration: https://docs.aws.amazon.com/step-functions/latest/dg/connect-sqs.html
    """

    def build(scope: Construct, state_id: str, *, result_path: str, task_timeout: sfn.Timeout) -> Any:
        del task_timeout  # rendered below as TimeoutSeconds (a CustomState takes the raw ASL)
        return sfn.CustomState(
            scope,
            state_id,
            state_json={
                "Type": "Task",
                "Resource": f"arn:{Stack.of(scope).partition}:states:::sqs:sendMessage",
                "Parameters": {
                    "QueueUrl": queue.queue_url,
                    "MessageBody": {
                        "order_id.$": "$.order_id",
                        "payment_attempt.$": "$.payment_attempt",
                        "correlation_id.$": "$.correlation_id",
                        "reason.$": (
                            "States.Format('MarkNeedsAttention failed in execution {}: the order is not marked "
                            "NEEDS_ATTENTION; this message is its only record', $$.Execution.Name)"
                        ),
                        "error.$": error_path,
                        "source": LAST_RESORT_SOURCE,
                    },
                    "MessageAttributes": {
                        "correlation_id": {"DataType": "String", "StringValue.$": "$.correlation_id"}
                    },
                },
                "TimeoutSeconds": LAST_RESORT_TIMEOUT_SECONDS,
                "ResultSelector": {"message_id.$": "$.MessageId"},
                "ResultPath": result_path,
            },
        )

    return ServiceTask(build, timeout=Duration.seconds(LAST_RESORT_TIMEOUT_SECONDS), retry_on=SQS_SEND_RETRY_ERRORS)


#: The last resort's TimeoutSeconds (one SendMessage call).
LAST_RESORT_TIMEOUT_SECONDS = 10
