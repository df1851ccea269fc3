"""Every alarm action must reach the topic on AWS: the topic policy and key policy let CloudWatch publish.

A topic policy replaces SNS's default one, so ``enforce_ssl=True`` alone (a single Deny) refuses
``cloudwatch.amazonaws.com``: these tests fail on a template shipping that.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest
from aws_cdk import Aws, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Annotations, Match

from constructs_lib.checks import UNDELIVERABLE_ACTION
from constructs_lib.delivery import CLOUDWATCH_PRINCIPAL, Request, allowed, decide
from stacks.order_constructs.alerting import Alerting, AlertingProps
from tests.infra.conftest import SynthResult

STACK = "/ChecksUnderTest"
ALARM_ARN = "arn:aws:cloudwatch:us-east-1:123456789012:alarm:x"


def _alarm_on(stack: Stack, topic: sns.ITopic) -> None:
    alarm = cloudwatch.Alarm(
        stack,
        "Alarm",
        metric=cloudwatch.Metric(namespace="Test", metric_name="M"),
        threshold=0,
        evaluation_periods=1,
    )
    alarm.add_alarm_action(cw_actions.SnsAction(topic))


def test_alarm_delivery_ssl_only_topic_refuses_cloudwatch(checked_stack: Stack) -> None:
    _alarm_on(checked_stack, sns.Topic(checked_stack, "Topic", enforce_ssl=True))
    Annotations.from_stack(checked_stack).has_error(
        f"{STACK}/Alarm/Resource", Match.string_like_regexp(re.escape(UNDELIVERABLE_ACTION) + ".*topic policy")
    )


def test_alarm_delivery_topic_without_policy_is_deliverable(checked_stack: Stack) -> None:
    """No topic policy: SNS's default one lets the owning account's services publish."""
    _alarm_on(checked_stack, sns.Topic(checked_stack, "Topic"))
    Annotations.from_stack(checked_stack).has_no_error("*", Match.string_like_regexp(re.escape(UNDELIVERABLE_ACTION)))


def test_alarm_delivery_alerting_topic_is_deliverable(checked_stack: Stack) -> None:
    alerting = Alerting(checked_stack, "Alerting", props=AlertingProps())
    _alarm_on(checked_stack, alerting.topic)
    Annotations.from_stack(checked_stack).has_no_error("*", Match.string_like_regexp(re.escape(UNDELIVERABLE_ACTION)))


def _topic_policy(result: SynthResult) -> list[dict[str, Any]]:
    """The page topic's policy (the ticket topic's is checked in test_alarm_routing.py)."""
    topic = {"Ref": result.logical_id(result.stack.alarm_topic)}
    (policy,) = [p for p in result.of_type("AWS::SNS::TopicPolicy").values() if topic in p["Properties"]["Topics"]]
    return [policy["Properties"]["PolicyDocument"]]


def test_alarm_delivery_pipeline_has_no_undeliverable_alarm(dev: SynthResult, prod: SynthResult) -> None:
    for result in (dev, prod):
        errors = [m for m in result.validation_report().get("errors", []) if UNDELIVERABLE_ACTION in str(m)]
        assert errors == []
        assert result.of_type("AWS::CloudWatch::Alarm"), "the pipeline has alarms"


def test_alarm_delivery_topic_policy_scoped_and_tls_only(dev: SynthResult) -> None:
    """CloudWatch may publish for this account's alarms only, over TLS; another account's alarm is refused."""
    documents = _topic_policy(dev)
    topic_id = dev.logical_id(dev.stack.alarm_topic)
    account = "<Ref:AWS::AccountId>"
    ours = f"arn:<Ref:AWS::Partition>:cloudwatch:<Ref:AWS::Region>:{account}:alarm:x"
    context = {"aws:SourceArn": ours, "aws:SourceAccount": account, "aws:SecureTransport": "true"}
    publish = Request(CLOUDWATCH_PRINCIPAL, "sns:Publish", f"<Ref:{topic_id}>", context)
    assert allowed(documents, publish)
    plain = {**context, "aws:SecureTransport": "false"}
    assert not allowed(documents, dataclasses.replace(publish, context=plain))
    other = {**context, "aws:SourceAccount": "9" * 12, "aws:SourceArn": ALARM_ARN.replace("123456789012", "9" * 12)}
    assert not allowed(documents, dataclasses.replace(publish, context=other))


def test_alarm_delivery_orders_queue_pages_on_oldest_message_age(dev: SynthResult) -> None:
    """A stalled consumer: the oldest order waiting over 10 minutes pages (ApproximateAgeOfOldestMessage)."""
    ages = [
        a["Properties"]
        for a in dev.of_type("AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("MetricName") == "ApproximateAgeOfOldestMessage"
    ]
    (age,) = ages
    assert (age["Threshold"], age["Period"], age["Statistic"]) == (600, 60, "Maximum")
    assert dev.notifies(age) == [{"Ref": dev.logical_id(dev.stack.alarm_topic)}]  # a page
    assert "OKActions" not in age  # no notification from a deploy (test_alarm_routing.py)


# -- conditions as AWS evaluates them (issue 43): every form below is AWS's documented answer ---------------------
# Operators, and a key missing from the request (false, but true for a negated operator; ...IfExists true):
#   https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html
# ForAnyValue / ForAllValues over a request's values:
#   https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-single-vs-multi-valued-context-keys.html
# An applicable Deny wins over any Allow:
#   https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html
# A service principal's request carries no aws:PrincipalOrgID (the key is present only for an organization's
# member accounts' principals):
#   https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-keys.html#condition-keys-principalorgid
ACCOUNT = "<Ref:AWS::AccountId>"
OUR_ALARM = f"arn:<Ref:AWS::Partition>:cloudwatch:<Ref:AWS::Region>:{ACCOUNT}:alarm:x"
CONTEXT = {"aws:SourceArn": OUR_ALARM, "aws:SourceAccount": ACCOUNT, "aws:SecureTransport": "true"}
PUBLISH = Request(CLOUDWATCH_PRINCIPAL, "sns:Publish", "<Ref:Topic>", CONTEXT)
ALLOW_CLOUDWATCH = {
    "Sid": "CloudWatchPublishes",
    "Effect": "Allow",
    "Principal": {"Service": CLOUDWATCH_PRINCIPAL},
    "Action": "sns:Publish",
    "Resource": "*",
}


def _guardrail(operator: str, key: str, value: Any) -> dict[str, Any]:
    return {
        "Sid": "Guardrail",
        "Effect": "Deny",
        "Principal": "*",
        "Action": "sns:Publish",
        "Resource": "*",
        "Condition": {operator: {key: value}},
    }


@pytest.mark.parametrize(
    ("operator", "key", "value"),
    [
        # The key is present and differs from the policy's value: the Deny applies.
        ("StringNotEqualsIfExists", "aws:SourceAccount", "111122223333"),
        # The request's one value matches one of the policy's: the Deny applies.
        ("ForAnyValue:StringEquals", "aws:SourceAccount", [ACCOUNT, "111122223333"]),
        # The organisation guardrail: no aws:PrincipalOrgID in CloudWatch's request, a negated operator is true.
        ("StringNotEquals", "aws:PrincipalOrgID", "o-a1b2c3d4e5"),
    ],
)
def test_alarm_delivery_guardrail_deny_refuses_cloudwatch(operator: str, key: str, value: Any) -> None:
    assert allowed([{"Statement": [ALLOW_CLOUDWATCH]}], PUBLISH)
    assert not allowed([{"Statement": [ALLOW_CLOUDWATCH, _guardrail(operator, key, value)]}], PUBLISH)


def test_alarm_delivery_guardrail_deny_on_missing_or_other_values_as_aws_documents() -> None:
    """A value that does not match leaves the Allow standing; a missing key: ...IfExists holds (the Deny
    applies), ForAnyValue does not (the Allow stands)."""
    for operator, key, value in [
        ("StringNotEqualsIfExists", "aws:SourceAccount", ACCOUNT),
        ("StringNotEqualsIfExists", "aws:PrincipalOrgID", "o-a1b2c3d4e5"),  # missing key: IfExists is true...
        ("ForAnyValue:StringEquals", "aws:SecureTransport", "false"),
        ("ForAnyValue:StringEquals", "aws:PrincipalOrgID", "o-a1b2c3d4e5"),  # missing key: ForAnyValue is false
    ]:
        guardrail = _guardrail(operator, key, value)
        expected = key != "aws:PrincipalOrgID" or operator.startswith("ForAnyValue")
        assert allowed([{"Statement": [ALLOW_CLOUDWATCH, guardrail]}], PUBLISH) is expected, (operator, key)


def test_alarm_delivery_guardrail_on_a_literal_account_is_judged_closed() -> None:
    """The template's account is a parameter at synth: whether it is 111122223333 cannot be known, so a Deny
    on that literal is taken to apply, and the statement is named."""
    guardrail = _guardrail("ForAnyValue:StringEquals", "aws:SourceAccount", "111122223333")
    decision = decide([{"Statement": [ALLOW_CLOUDWATCH, guardrail]}], PUBLISH)
    assert not decision.allowed
    assert decision.closed and "'Guardrail'" in decision.closed[0] and "aws:SourceAccount" in decision.closed[0]


def test_alarm_delivery_allow_string_equals_ignore_case_lets_cloudwatch_publish() -> None:
    shouting = f"ARN:<Ref:AWS::Partition>:CLOUDWATCH:<Ref:AWS::Region>:{ACCOUNT}:ALARM:X"
    statement = {**ALLOW_CLOUDWATCH, "Condition": {"StringEqualsIgnoreCase": {"aws:SourceArn": shouting}}}
    assert allowed([{"Statement": [statement]}], PUBLISH)
    exact = {**ALLOW_CLOUDWATCH, "Condition": {"StringEquals": {"aws:SourceArn": shouting}}}
    assert not allowed([{"Statement": [exact]}], PUBLISH)


def test_alarm_delivery_unknown_operator_fails_closed_and_names_the_statement(checked_stack: Stack) -> None:
    """An operator no evaluator knows: the Deny is taken to apply, and the error names its Sid."""
    topic = sns.Topic(checked_stack, "Topic")
    topic.add_to_resource_policy(_statement(ALLOW_CLOUDWATCH))
    topic.add_to_resource_policy(_statement(_guardrail("StringMatchesRegex", "aws:SourceAccount", ".*")))
    _alarm_on(checked_stack, topic)
    Annotations.from_stack(checked_stack).has_error(
        f"{STACK}/Alarm/Resource", Match.string_like_regexp(re.escape(UNDELIVERABLE_ACTION) + ".*Guardrail")
    )


def test_alarm_delivery_org_guardrail_on_topic_policy_is_an_error(checked_stack: Stack) -> None:
    topic = sns.Topic(checked_stack, "Topic")
    topic.add_to_resource_policy(_statement(ALLOW_CLOUDWATCH))
    topic.add_to_resource_policy(_statement(_guardrail("StringNotEquals", "aws:PrincipalOrgID", "o-a1b2c3d4e5")))
    _alarm_on(checked_stack, topic)
    Annotations.from_stack(checked_stack).has_error(
        f"{STACK}/Alarm/Resource", Match.string_like_regexp(re.escape(UNDELIVERABLE_ACTION) + ".*topic policy")
    )


@pytest.mark.parametrize(("prefix", "deliverable"), [("ChecksUnderTest-", True), ("OtherStack-", False)])
def test_alarm_delivery_source_arn_pattern_matched_against_the_alarm_arn_as_aws_forms_it(
    checked_stack: Stack, prefix: str, deliverable: bool
) -> None:
    """CloudFormation names an unnamed alarm ``<stack name>-<logical ID>-<random>``
    (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-properties-name.html): an Allow for
    ``alarm:ChecksUnderTest-*`` covers this stack's alarms, one for ``alarm:OtherStack-*`` does not."""
    topic = sns.Topic(checked_stack, "Topic")
    arn = f"arn:{Aws.PARTITION}:cloudwatch:{Aws.REGION}:{Aws.ACCOUNT_ID}:alarm:{prefix}*"
    topic.add_to_resource_policy(_statement({**ALLOW_CLOUDWATCH, "Condition": {"ArnLike": {"aws:SourceArn": arn}}}))
    _alarm_on(checked_stack, topic)
    annotations = Annotations.from_stack(checked_stack)
    undeliverable = Match.string_like_regexp(re.escape(UNDELIVERABLE_ACTION))
    if deliverable:
        annotations.has_no_error("*", undeliverable)
    else:
        annotations.has_error(f"{STACK}/Alarm/Resource", undeliverable)


def test_alarm_delivery_source_arn_pattern_on_an_unknown_part_of_the_name_fails_closed(checked_stack: Stack) -> None:
    """``alarm:ChecksUnderTest-Alarm*`` depends on the part of the name CloudFormation generates (the logical
    ID's rendering and the random suffix): the check cannot know it, so it judges the Allow not to apply."""
    topic = sns.Topic(checked_stack, "Topic")
    arn = f"arn:{Aws.PARTITION}:cloudwatch:{Aws.REGION}:{Aws.ACCOUNT_ID}:alarm:ChecksUnderTest-Alarm*"
    topic.add_to_resource_policy(_statement({**ALLOW_CLOUDWATCH, "Condition": {"ArnLike": {"aws:SourceArn": arn}}}))
    _alarm_on(checked_stack, topic)
    Annotations.from_stack(checked_stack).has_error(
        f"{STACK}/Alarm/Resource", Match.string_like_regexp(re.escape(UNDELIVERABLE_ACTION) + ".*CloudWatchPublishes")
    )


def _statement(raw: dict[str, Any]) -> iam.PolicyStatement:
    return iam.PolicyStatement.from_json(raw)


def test_alarm_delivery_guardrail_on_an_unrendered_intrinsic_is_judged_closed() -> None:
    """A value the check cannot render (``Fn::ImportValue``) may be anything: a Deny on it is taken to apply."""
    guardrail = _guardrail("StringEquals", "aws:SecureTransport", {"Fn::ImportValue": "SharedFlag"})
    decision = decide([{"Statement": [ALLOW_CLOUDWATCH, guardrail]}], PUBLISH)
    assert not decision.allowed and "'Guardrail'" in decision.closed[0]
