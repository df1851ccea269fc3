"""AWS limits in the local run: each one fails the call with AWS's own error code."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from clocks import StepClock
from moto import mock_aws

from local_cloud.errors import LocalCloudError
from local_cloud.limits import Quotas, TokenBucket, esm_concurrency, parse_quota, parse_quotas
from local_cloud.limits_enforce import LimitEnforcer, LimitExceeded, enforce_limits

PASS_MACHINE = json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}})


@pytest.fixture
def clock() -> StepClock:
    return StepClock()


def _machine() -> str:
    sfn = boto3.client("stepfunctions")
    arn: str = sfn.create_state_machine(name="m", definition=PASS_MACHINE, roleArn="arn:aws:iam::123456789012:role/r")[
        "stateMachineArn"
    ]
    return arn


def _code(exc: pytest.ExceptionInfo[ClientError]) -> str:
    return str(exc.value.response["Error"]["Code"])


def test_parse_quota_accepts_known_names_and_refuses_the_rest() -> None:
    assert parse_quota("sfn_start_refill=600") == ("sfn_start_refill", 600.0)
    assert parse_quotas(["lambda_concurrency=3000", "esm_max_concurrency=50"]) == {
        "lambda_concurrency": 3000.0,
        "esm_max_concurrency": 50.0,
    }
    for bad in ("nope=1", "sfn_start_refill", "sfn_start_refill=abc", "sfn_start_refill=-1", "sfn_start_refill=inf"):
        with pytest.raises(LocalCloudError):
            parse_quota(bad)


def test_quotas_scaled_divides_rates_not_payloads() -> None:
    q = Quotas().scaled(100)
    assert (q.sfn_start_bucket, q.sfn_start_refill, q.lambda_concurrency) == (13, 3, 10)
    assert q.sfn_payload_bytes == 256 * 1024 and q.dynamodb_item_bytes == 400 * 1024
    other = Quotas.for_region_class("other")
    assert (other.sfn_start_bucket, other.sfn_start_refill, other.sfn_transition_refill) == (800, 150, 500)


def test_token_bucket_refills_on_the_clock(clock: StepClock) -> None:
    bucket = TokenBucket(3, 2, clock.now)
    assert [bucket.take() for _ in range(4)] == [True, True, True, False]
    clock.t += 1.0
    assert [bucket.take() for _ in range(3)] == [True, True, False]
    clock.t += 100
    assert bucket.tokens == 3  # never above the bucket


def test_start_execution_over_the_bucket_is_throttled(aws: None, clock: StepClock) -> None:
    enforcer = LimitEnforcer(Quotas(sfn_start_bucket=2, sfn_start_refill=1), clock)
    with enforce_limits(enforcer):
        arn = _machine()
        sfn = boto3.client("stepfunctions", config=_no_retries())
        sfn.start_execution(stateMachineArn=arn, name="a")
        sfn.start_execution(stateMachineArn=arn, name="b")
        with pytest.raises(ClientError) as exc:
            sfn.start_execution(stateMachineArn=arn, name="c")
        assert _code(exc) == "ThrottlingException"
        clock.t += 1.0  # one token back
        sfn.start_execution(stateMachineArn=arn, name="c")
    assert enforcer.throttles == {"stepfunctions:StartExecution": 1}


def test_start_execution_input_over_256_kib_is_refused(aws: None, clock: StepClock) -> None:
    enforcer = LimitEnforcer(Quotas(), clock)
    with enforce_limits(enforcer):
        arn = _machine()
        sfn = boto3.client("stepfunctions")
        big = json.dumps({"blob": "x" * (256 * 1024)})
        with pytest.raises(ClientError) as exc:
            sfn.start_execution(stateMachineArn=arn, name="big", input=big)
        assert _code(exc) == "ValidationException"
        assert "262144" in str(exc.value)
        sfn.start_execution(stateMachineArn=arn, name="small", input=json.dumps({"blob": "x" * 1000}))


def test_sqs_message_over_the_queue_limit_is_refused(aws: None, clock: StepClock) -> None:
    enforcer = LimitEnforcer(Quotas(sqs_message_bytes=1024), clock)
    with enforce_limits(enforcer):
        sqs = boto3.client("sqs")
        url = sqs.create_queue(QueueName="q")["QueueUrl"]
        sqs.send_message(QueueUrl=url, MessageBody="x" * 900)
        attrs = {"correlation_id": {"DataType": "String", "StringValue": "c" * 200}}
        with pytest.raises(ClientError) as exc:  # body fits, body + attribute does not
            sqs.send_message(QueueUrl=url, MessageBody="x" * 900, MessageAttributes=attrs)
        assert _code(exc) == "InvalidParameterValue"
        with pytest.raises(ClientError) as batch_exc:
            sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": "y" * 600} for i in range(2)])
        assert _code(batch_exc) == "BatchRequestTooLong"


def test_sqs_batch_total_is_the_service_limit_not_the_queue_maximum_message_size(aws: None, clock: StepClock) -> None:
    """A queue's MaximumMessageSize bounds each message; the batch's total is SQS's own limit."""
    enforcer = LimitEnforcer(Quotas(sqs_message_bytes=4096), clock)
    with enforce_limits(enforcer):
        sqs = boto3.client("sqs")
        url = sqs.create_queue(QueueName="small", Attributes={"MaximumMessageSize": "1024"})["QueueUrl"]
        enforcer.queue_limits["small"] = 1024  # as read from the template's MaximumMessageSize
        sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": "y" * 1000} for i in range(3)])
        with pytest.raises(ClientError) as exc:
            sqs.send_message(QueueUrl=url, MessageBody="z" * 1025)
        assert _code(exc) == "InvalidParameterValue" and "shorter than 1024 bytes" in str(exc.value)
        with pytest.raises(ClientError) as batch_exc:
            sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": "y" * 1000} for i in range(5)])
        assert _code(batch_exc) == "BatchRequestTooLong"


def test_dynamodb_item_over_400_kb_is_refused(aws: None, clock: StepClock) -> None:
    enforcer = LimitEnforcer(Quotas(dynamodb_item_bytes=1000), clock)
    with enforce_limits(enforcer):
        ddb = boto3.client("dynamodb")
        ddb.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        with pytest.raises(ClientError) as exc:
            ddb.put_item(TableName="t", Item={"pk": {"S": "a"}, "blob": {"S": "x" * 2000}})
        assert _code(exc) == "ValidationException"
        assert "Item size has exceeded the maximum allowed size" in str(exc.value)


def test_lambda_concurrency_exhausted_is_too_many_requests(clock: StepClock) -> None:
    enforcer = LimitEnforcer(Quotas(lambda_concurrency=2), clock)
    enforcer.reserved = {"reserved-fn": 1}
    assert enforcer.acquire("reserved-fn")  # an invocation in flight holds the reserved function's only slot
    with pytest.raises(LimitExceeded) as exc, enforcer.slot("reserved-fn"):
        pass
    assert exc.value.code == "TooManyRequestsException"
    with enforcer.slot("other"):  # unreserved pool: 2 - 1 reserved = 1 slot
        assert not enforcer.acquire("third")
    enforcer.release("reserved-fn")
    assert enforcer.acquire("third")  # slots come back
    assert enforcer.throttles["lambda:Invoke"] == 2


def test_event_source_mapping_ramps_from_5_by_300_a_minute_to_the_cap() -> None:
    q = Quotas()
    assert esm_concurrency(q, 0) == 5
    assert esm_concurrency(q, 60) == 305
    assert esm_concurrency(q, 120) == 605
    assert esm_concurrency(q, 600) == 1000
    assert esm_concurrency(q, 600, maximum_concurrency=50) == 50
    assert esm_concurrency(q.scaled(100), 60) == pytest.approx(3.05)


def _no_retries() -> Any:
    from botocore.config import Config

    return Config(retries={"max_attempts": 1, "mode": "standard"})


THREE_STATES = json.dumps(
    {
        "StartAt": "A",
        "States": {
            "A": {"Type": "Pass", "Next": "B"},
            "B": {"Type": "Pass", "Next": "C"},
            "C": {"Type": "Pass", "End": True},
        },
    }
)


def _status(sfn: Any, arn: str) -> str:
    return str(sfn.describe_execution(executionArn=arn)["status"])


def test_state_transitions_over_the_bucket_slow_the_execution_until_refill(clock: StepClock) -> None:
    """AWS slows a Standard execution whose StateTransition bucket is empty (it does not fail it):
    the third state waits for the clock. This also pins moto's interpreter hooks (canary)."""
    import time

    enforcer = LimitEnforcer(Quotas(sfn_transition_bucket=2, sfn_transition_refill=1), clock)
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}), enforce_limits(enforcer):
        sfn = boto3.client("stepfunctions")
        machine = sfn.create_state_machine(
            name="three", definition=THREE_STATES, roleArn="arn:aws:iam::123456789012:role/r"
        )["stateMachineArn"]
        execution = sfn.start_execution(stateMachineArn=machine, name="slowed")["executionArn"]
        deadline = time.monotonic() + 10
        while not enforcer.throttles and time.monotonic() < deadline:
            time.sleep(0.01)
        assert enforcer.throttles == {"stepfunctions:StateTransition": 1}
        assert _status(sfn, execution) == "RUNNING"  # waiting for a token, not failed
        clock.t += 1.0
        clock.notify_moved()
        while _status(sfn, execution) == "RUNNING" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _status(sfn, execution) == "SUCCEEDED"
    assert enforcer.transitions == 3
    assert enforcer.finished == {"slowed": 1_000_001.0}  # ended when the clock let it
