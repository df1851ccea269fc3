"""The IAM evaluator, the call -> (action, resource) mapping, and the access-denied error the local run raises."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from local_cloud.alarm_actions import resource_policy_for
from local_cloud.iam import Decision, Policy, policy_from_documents, wildcard_match
from local_cloud.iam_calls import checks_for, function_arn, queue_arn
from local_cloud.iam_enforce import Principal, access_denied, merge_reports

TABLE = "arn:aws:dynamodb:us-east-1:123456789012:table/Orders"
QUEUE = "arn:aws:sqs:us-east-1:123456789012:orders"


def policy(*statements: dict[str, Any]) -> Policy:
    return policy_from_documents([{"Version": "2012-10-17", "Statement": list(statements)}])


def allow(action: Any, resource: Any, **extra: Any) -> dict[str, Any]:
    return {"Effect": "Allow", "Action": action, "Resource": resource, **extra}


def test_allow_only_the_granted_action_on_the_granted_resource() -> None:
    p = policy(allow(["dynamodb:GetItem", "dynamodb:PutItem"], TABLE))
    assert p.evaluate("dynamodb:GetItem", TABLE) is Decision.ALLOW
    assert p.evaluate("dynamodb:DeleteItem", TABLE) is Decision.IMPLICIT_DENY
    assert p.evaluate("dynamodb:GetItem", TABLE + "-other") is Decision.IMPLICIT_DENY
    assert policy().evaluate("dynamodb:GetItem", TABLE) is Decision.IMPLICIT_DENY


def test_actions_are_case_insensitive_resources_case_sensitive() -> None:
    p = policy(allow("DynamoDB:getitem", TABLE))
    assert p.evaluate("dynamodb:GetItem", TABLE) is Decision.ALLOW
    assert p.evaluate("dynamodb:GetItem", TABLE.lower()) is Decision.IMPLICIT_DENY


def test_wildcards_in_action_and_resource() -> None:
    p = policy(allow("dynamodb:*Item", "arn:aws:dynamodb:us-east-1:123456789012:table/Orders*"))
    assert p.evaluate("dynamodb:UpdateItem", TABLE) is Decision.ALLOW
    assert p.evaluate("dynamodb:UpdateItem", TABLE + "/index/by-status") is Decision.ALLOW
    assert p.evaluate("dynamodb:Query", TABLE) is Decision.IMPLICIT_DENY
    q = policy(allow("sqs:?etQueueUrl", "*"))
    assert q.evaluate("sqs:GetQueueUrl", QUEUE) is Decision.ALLOW
    assert q.evaluate("sqs:GGetQueueUrl", QUEUE) is Decision.IMPLICIT_DENY
    assert wildcard_match("a.b*", "a.bc") and not wildcard_match("a.b*", "axbc")  # only * and ? are special


def test_explicit_deny_wins_over_allow() -> None:
    p = policy(allow("dynamodb:*", "*"), {"Effect": "Deny", "Action": "dynamodb:DeleteItem", "Resource": TABLE})
    assert p.evaluate("dynamodb:DeleteItem", TABLE) is Decision.EXPLICIT_DENY
    assert p.evaluate("dynamodb:DeleteItem", TABLE + "2") is Decision.ALLOW
    assert p.evaluate("dynamodb:PutItem", TABLE) is Decision.ALLOW


def test_not_action_and_not_resource() -> None:
    p = policy({"Effect": "Allow", "NotAction": ["dynamodb:Delete*", "sqs:*"], "Resource": "*"})
    assert p.evaluate("dynamodb:PutItem", TABLE) is Decision.ALLOW
    assert p.evaluate("dynamodb:DeleteItem", TABLE) is Decision.IMPLICIT_DENY
    assert p.evaluate("sqs:SendMessage", QUEUE) is Decision.IMPLICIT_DENY
    q = policy({"Effect": "Allow", "Action": "dynamodb:GetItem", "NotResource": TABLE})
    assert q.evaluate("dynamodb:GetItem", TABLE + "2") is Decision.ALLOW
    assert q.evaluate("dynamodb:GetItem", TABLE) is Decision.IMPLICIT_DENY


def test_conditions_supported_and_unsupported() -> None:
    cond = {"StringEquals": {"aws:RequestedRegion": ["us-east-1", "eu-west-1"]}}
    p = policy(allow("sqs:SendMessage", QUEUE, Condition=cond))
    assert p.evaluate("sqs:SendMessage", QUEUE, {"aws:RequestedRegion": "eu-west-1"}) is Decision.ALLOW
    assert p.evaluate("sqs:SendMessage", QUEUE, {"aws:requestedregion": "us-east-1"}) is Decision.ALLOW
    assert p.evaluate("sqs:SendMessage", QUEUE, {"aws:RequestedRegion": "us-west-2"}) is Decision.IMPLICIT_DENY
    assert p.evaluate("sqs:SendMessage", QUEUE) is Decision.IMPLICIT_DENY  # missing key: no match
    numeric = policy(allow("sqs:SendMessage", QUEUE, Condition={"NumericLessThan": {"x": "1"}}))
    assert numeric.evaluate("sqs:SendMessage", QUEUE, {"x": "0"}) is Decision.ALLOW
    assert numeric.evaluate("sqs:SendMessage", QUEUE, {"x": "1"}) is Decision.IMPLICIT_DENY
    assert numeric.unsupported == []
    unsupported = policy(allow("sqs:SendMessage", QUEUE, Condition={"NumericLessThanRoughly": {"x": "1"}}))
    assert unsupported.evaluate("sqs:SendMessage", QUEUE, {"x": "0"}) is Decision.IMPLICIT_DENY
    assert unsupported.unsupported == ["NumericLessThanRoughly"]


def test_grants_and_unused_grants() -> None:
    p = policy(allow(["dynamodb:GetItem", "dynamodb:DeleteItem"], [TABLE, TABLE + "2"]), allow("xray:Put*", "*"))
    principal = Principal("fn", "function", "Role", "role", p)
    principal.used = {("dynamodb:GetItem", TABLE), ("xray:PutTraceSegments", "*")}
    assert principal.granted_unused() == [
        {"action": "dynamodb:DeleteItem", "resources": [TABLE, TABLE + "2"]},
        {"action": "dynamodb:GetItem", "resources": [TABLE + "2"]},
    ]


@pytest.mark.parametrize(
    ("service", "operation", "params", "expected"),
    [
        ("dynamodb", "PutItem", {"TableName": "Orders"}, [("dynamodb:PutItem", TABLE)]),
        (
            "dynamodb",
            "Query",
            {"TableName": "Orders", "IndexName": "by-status"},
            [("dynamodb:Query", TABLE + "/index/by-status")],
        ),
        (
            "dynamodb",
            "TransactWriteItems",
            {
                "TransactItems": [
                    {"Update": {"TableName": "Orders"}},
                    {"ConditionCheck": {"TableName": "Inv"}},
                    {"Put": {"TableName": "Inv"}},
                ]
            },
            [
                ("dynamodb:UpdateItem", TABLE),
                ("dynamodb:ConditionCheckItem", TABLE.replace("Orders", "Inv")),
                ("dynamodb:PutItem", TABLE.replace("Orders", "Inv")),
            ],
        ),
        (
            "sqs",
            "SendMessageBatch",
            {"QueueUrl": "https://sqs.us-east-1.amazonaws.com/123456789012/orders"},
            [("sqs:SendMessage", QUEUE)],
        ),
        (
            "stepfunctions",
            "StartExecution",
            {"stateMachineArn": "arn:aws:states:us-east-1:123456789012:stateMachine:saga"},
            [("states:StartExecution", "arn:aws:states:us-east-1:123456789012:stateMachine:saga")],
        ),
        (
            "lambda",
            "Invoke",
            {"FunctionName": "pay"},
            [("lambda:InvokeFunction", "arn:aws:lambda:us-east-1:123456789012:function:pay")],
        ),
        (
            "secretsmanager",
            "GetSecretValue",
            {"SecretId": "arn:aws:secretsmanager:us-east-1:123456789012:secret:api-AbCdEf"},
            [("secretsmanager:GetSecretValue", "arn:aws:secretsmanager:us-east-1:123456789012:secret:api-AbCdEf")],
        ),
        ("cloudwatch", "PutMetricData", {"Namespace": "x"}, [("cloudwatch:PutMetricData", "*")]),
    ],
)
def test_calls_map_to_actions_and_resources(
    service: str, operation: str, params: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    assert checks_for(service, operation, params, "us-east-1") == (expected, True)


def test_unmapped_call_is_checked_against_star_and_flagged() -> None:
    assert checks_for("s3", "PutObject", {"Bucket": "b", "Key": "k"}, "us-east-1") == ([("s3:PutObject", "*")], False)


def test_arn_helpers() -> None:
    assert queue_arn("http://127.0.0.1:5000/123456789012/q", "us-east-1") == "arn:aws:sqs:us-east-1:123456789012:q"
    assert function_arn("f:live", "us-east-1") == "arn:aws:lambda:us-east-1:123456789012:function:f:live"
    assert function_arn("f", "us-east-1", "3") == "arn:aws:lambda:us-east-1:123456789012:function:f:3"


@pytest.mark.parametrize(
    ("service", "code", "status"), [("dynamodb", "AccessDeniedException", 400), ("sqs", "AccessDenied", 403)]
)
def test_access_denied_looks_like_aws(service: str, code: str, status: int) -> None:
    client = boto3.client(service, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    principal = Principal("my-fn", "function", "Role", "my-role", Policy())
    error = access_denied(client, "PutItem", principal, ("dynamodb:PutItem", TABLE), Decision.IMPLICIT_DENY)
    assert isinstance(error, ClientError)
    assert error.response["Error"]["Code"] == code
    assert error.response["ResponseMetadata"]["HTTPStatusCode"] == status
    assert "assumed-role/my-role/my-fn is not authorized to perform: dynamodb:PutItem" in str(error)


def test_shard_sections_merge_counts_and_intersect_unused_grants() -> None:
    def section(calls: int, denied: int, unused: dict[str, list[str]]) -> dict[str, Any]:
        first = [{"action": "sqs:SendMessage", "resource": QUEUE, "count": denied}] if denied else []
        return {
            "fn": {
                "kind": "function",
                "role": "Role",
                "calls": calls,
                "platform_calls": 1,
                "denied": {"count": denied, "first": first},
                "unmapped": {"count": 0, "operations": {}},
                "granted_unused": [{"action": a, "resources": rs} for a, rs in unused.items()],
            }
        }

    a = section(10, 2, {"dynamodb:DeleteItem": [TABLE, TABLE + "2"], "dynamodb:GetItem": [TABLE]})
    b = section(5, 1, {"dynamodb:DeleteItem": [TABLE]})
    merged = merge_reports([a, b])["fn"]
    assert merged["calls"] == 15 and merged["platform_calls"] == 2
    assert merged["denied"] == {"count": 3, "first": [{"action": "sqs:SendMessage", "resource": QUEUE, "count": 3}]}
    assert merged["granted_unused"] == [{"action": "dynamodb:DeleteItem", "resources": [TABLE]}]


# -- conditions as AWS evaluates them (issue 43), on the alarm publish path CloudWatch takes -----------------------
# Operators and missing keys: https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html
# Set operators: https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-single-vs-multi-valued-context-keys.html
# Deny wins: https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html
# CloudWatch's request (aws:SourceArn, aws:SourceAccount, no aws:PrincipalOrgID for a service principal):
# https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Notify_Users_Alarm_Changes.html
TOPIC = "arn:aws:sns:us-east-1:123456789012:alerts"
ALARM_ARN = "arn:aws:cloudwatch:us-east-1:123456789012:alarm:OrderPipeline-dev-DlqAlarm-1A2B3C"
CLOUDWATCH_CONTEXT = {"aws:SourceArn": ALARM_ARN, "aws:SourceAccount": "123456789012", "aws:SecureTransport": "true"}
ALLOW_CLOUDWATCH = {
    "Effect": "Allow",
    "Principal": {"Service": "cloudwatch.amazonaws.com"},
    "Action": "sns:Publish",
    "Resource": TOPIC,
}


def _publish(*statements: dict[str, Any]) -> Decision:
    topic_policy = resource_policy_for([{"Statement": list(statements)}], "cloudwatch.amazonaws.com")
    return topic_policy.evaluate("sns:Publish", TOPIC, CLOUDWATCH_CONTEXT)


def _guardrail(operator: str, key: str, value: Any) -> dict[str, Any]:
    condition = {operator: {key: value}}
    return {"Effect": "Deny", "Principal": "*", "Action": "sns:Publish", "Resource": "*", "Condition": condition}


@pytest.mark.parametrize(
    ("operator", "key", "value"),
    [
        ("StringNotEqualsIfExists", "aws:SourceAccount", "111122223333"),
        ("ForAnyValue:StringEquals", "aws:SourceAccount", ["123456789012", "111122223333"]),
        ("StringNotEquals", "aws:PrincipalOrgID", "o-a1b2c3d4e5"),
        ("StringNotEqualsIfExists", "aws:PrincipalOrgID", "o-a1b2c3d4e5"),
        ("SomeFutureOperator", "aws:SourceAccount", "x"),  # unknown: the Deny is taken to apply (fail closed)
    ],
)
def test_iam_guardrail_deny_refuses_cloudwatch_publish(operator: str, key: str, value: Any) -> None:
    assert _publish(ALLOW_CLOUDWATCH) is Decision.ALLOW
    assert _publish(ALLOW_CLOUDWATCH, _guardrail(operator, key, value)) is Decision.EXPLICIT_DENY


@pytest.mark.parametrize(
    ("operator", "key", "value"),
    [
        ("StringNotEqualsIfExists", "aws:SourceAccount", "123456789012"),
        ("ForAnyValue:StringEquals", "aws:SourceAccount", "111122223333"),
        ("ForAnyValue:StringEquals", "aws:PrincipalOrgID", "o-a1b2c3d4e5"),  # missing key: ForAnyValue is false
    ],
)
def test_iam_guardrail_deny_not_applying_leaves_the_allow(operator: str, key: str, value: Any) -> None:
    assert _publish(ALLOW_CLOUDWATCH, _guardrail(operator, key, value)) is Decision.ALLOW


def test_iam_allow_string_equals_ignore_case_allows() -> None:
    condition = {"StringEqualsIgnoreCase": {"aws:SourceArn": ALARM_ARN.upper()}}
    assert _publish({**ALLOW_CLOUDWATCH, "Condition": condition}) is Decision.ALLOW


def test_iam_allow_with_unknown_operator_does_not_apply() -> None:
    condition = {"SomeFutureOperator": {"aws:SourceAccount": "123456789012"}}
    assert _publish({**ALLOW_CLOUDWATCH, "Condition": condition}) is Decision.IMPLICIT_DENY


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("arn:aws:cloudwatch:us-east-1:123456789012:alarm:OrderPipeline-dev-*", Decision.ALLOW),
        ("arn:aws:cloudwatch:*:*:alarm:OrderPipeline-dev-*", Decision.ALLOW),
        ("arn:aws:cloudwatch:us-east-1:123456789012:alarm:OrderPipeline-prod-*", Decision.IMPLICIT_DENY),
        # ArnLike matches each of the six colon-separated parts on its own: ``*`` does not span a colon.
        ("arn:aws:cloudwatch:*:alarm:OrderPipeline-dev-*", Decision.IMPLICIT_DENY),
    ],
)
def test_iam_source_arn_pattern_matches_the_alarm_arn(pattern: str, expected: Decision) -> None:
    condition = {"ArnLike": {"aws:SourceArn": pattern}}
    assert _publish({**ALLOW_CLOUDWATCH, "Condition": condition}) is expected
