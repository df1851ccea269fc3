"""Synth-time proof that every alarm's SNS action can be delivered: alarm -> action -> topic ->
topic policy and key policy, evaluated as SNS and KMS would for ``cloudwatch.amazonaws.com``.

Why hand-written: cdk-nag's SNS rules check that a topic is encrypted and refuses non-TLS
publishing (AwsSolutions-SNS2/SNS3), not that the publisher the topic exists for is still allowed;
no maintained library evaluates resource policies offline (IAM's policy simulator is an AWS
call). What this needs is small: explicit Deny wins, then an applicable Allow, else refused.

What AWS does, cited:

- An ``AWS::SNS::TopicPolicy`` *replaces* the topic's default policy (which lets the owning
  account's principals publish, ``AWS:SourceOwner``), so a policy holding only a Deny refuses
  every publisher: https://docs.aws.amazon.com/sns/latest/dg/sns-access-policy-use-cases.html
- CloudWatch publishes alarm notifications as the service principal ``cloudwatch.amazonaws.com``
  with ``aws:SourceArn`` (the alarm's ARN) and ``aws:SourceAccount``; over TLS:
  https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Notify_Users_Alarm_Changes.html
- To an encrypted topic it also needs ``kms:Decrypt`` and ``kms:GenerateDataKey*`` on the topic's
  customer-managed key (the ``aws/sns`` AWS-managed key cannot be used):
  https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html#compatibility-with-aws-services

Intrinsics are compared symbolically: ``{"Ref": "AWS::AccountId"}`` renders the same on the
policy side and the request side, so a condition on this account's alarms holds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from aws_cdk import Stack

CLOUDWATCH_PRINCIPAL = "cloudwatch.amazonaws.com"
PUBLISH = "sns:Publish"
#: What CloudWatch needs of an encrypted topic's key (the SNS key-management page above).
KEY_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKey")


def render(value: Any) -> str:
    """A resolved CloudFormation value as one string: intrinsics become ``<Ref:X>`` / ``<X.Attr>``."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        if "Ref" in value:
            return f"<Ref:{value['Ref']}>"
        if "Fn::GetAtt" in value:
            logical_id, attr = value["Fn::GetAtt"]
            return f"<{logical_id}.{attr}>"
        if "Fn::Join" in value:
            separator, parts = value["Fn::Join"]
            return str(separator).join(render(p) for p in parts)
    return str(value)


def _strings(value: Any) -> list[str]:
    if value is None:
        return []
    return [render(v) for v in value] if isinstance(value, list) else [render(value)]


def _wildcard(pattern: str, value: str, ignore_case: bool = False) -> bool:
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(body, value, re.IGNORECASE | re.DOTALL if ignore_case else re.DOTALL) is not None


_OPERATORS = {
    "StringEquals": (lambda w, g: w == g, False),
    "StringNotEquals": (lambda w, g: w == g, True),
    "StringLike": (_wildcard, False),
    "StringNotLike": (_wildcard, True),
    "ArnEquals": (_wildcard, False),
    "ArnLike": (_wildcard, False),
    "ArnNotEquals": (_wildcard, True),
    "ArnNotLike": (_wildcard, True),
    "Bool": (lambda w, g: w.lower() == g.lower(), False),
}


@dataclass(frozen=True)
class Request:
    """One request to a resource policy: a service principal's action on a resource, with its context."""

    service: str
    action: str
    resource: str
    context: Mapping[str, str]


def _principal_matches(statement: Mapping[str, Any], service: str) -> bool:
    principal = statement.get("Principal")
    if principal == "*":
        return True
    if not isinstance(principal, dict):
        return False
    return "*" in _strings(principal.get("AWS")) or service in _strings(principal.get("Service"))


def _condition_holds(condition: Mapping[str, Any] | None, context: Mapping[str, str]) -> bool:
    """Every operator and key must hold; an unknown operator or a missing key never holds."""
    lowered = {k.lower(): v for k, v in context.items()}
    for operator, keys in (condition or {}).items():
        if operator not in _OPERATORS:
            return False
        test, negated = _OPERATORS[operator]
        for key, wanted in keys.items():
            got = lowered.get(key.lower())
            if got is None:
                return False
            if any(test(w, got) for w in _strings(wanted)) == negated:
                return False
    return True


def _applies(statement: Mapping[str, Any], request: Request) -> bool:
    actions, not_actions = _strings(statement.get("Action")), _strings(statement.get("NotAction"))
    if not_actions:
        action_hit = not any(_wildcard(a, request.action, True) for a in not_actions)
    else:
        action_hit = any(_wildcard(a, request.action, True) for a in actions)
    resources = _strings(statement.get("Resource")) or ["*"]
    return (
        action_hit
        and _principal_matches(statement, request.service)
        and any(_wildcard(r, request.resource) for r in resources)
        and _condition_holds(statement.get("Condition"), request.context)
    )


def allowed(documents: Iterable[Mapping[str, Any]], request: Request) -> bool:
    """A resource policy's decision: an applicable Deny refuses, else an applicable Allow allows."""
    allow = False
    for document in documents:
        raw = document.get("Statement", [])
        for statement in raw if isinstance(raw, list) else [raw]:
            if _applies(statement, request):
                if statement.get("Effect") == "Deny":
                    return False
                allow = allow or statement.get("Effect") == "Allow"
    return allow


def _topic_ids_of(stack: Stack, actions: Any) -> list[str | None]:
    """Each SNS action's topic logical ID (None: an ARN outside this stack, not checked)."""
    ids: list[str | None] = []
    for action in stack.resolve(actions) or []:
        if isinstance(action, dict) and "Ref" in action:
            ids.append(str(action["Ref"]))
        elif isinstance(action, str) and action.split(":")[2:3] == ["sns"]:
            ids.append(None)
    return ids


def undeliverable_reason(
    stack: Stack,
    alarm_id: str,
    topic_id: str,
    topics: Mapping[str, Any],
    policies: Mapping[str, list[Any]],
    keys: Mapping[str, Any],
) -> str | None:
    """Why CloudWatch could not publish ``alarm_id``'s notification to ``topic_id``, or None."""
    account, region, partition = "<Ref:AWS::AccountId>", "<Ref:AWS::Region>", "<Ref:AWS::Partition>"
    alarm_arn = f"arn:{partition}:cloudwatch:{region}:{account}:alarm:<Ref:{alarm_id}>"
    context = {"aws:SourceArn": alarm_arn, "aws:SourceAccount": account, "aws:SecureTransport": "true"}
    topic = topics.get(topic_id)
    if topic is None:
        return f"action names {topic_id}, which is not an SNS topic of this stack"
    documents = policies.get(topic_id)
    publish = Request(CLOUDWATCH_PRINCIPAL, PUBLISH, f"<Ref:{topic_id}>", context)
    if documents is not None and not allowed(documents, publish):
        return f"the topic policy of {topic_id} does not let {CLOUDWATCH_PRINCIPAL} sns:Publish for this alarm"
    key = stack.resolve(topic.kms_master_key_id)
    if key is None:
        return None
    key_id = render(key)
    match = re.fullmatch(r"<(?:Ref:)?([^.>]+)(?:\.Arn)?>", key_id)
    if match is None or match.group(1) not in keys:
        if "alias/aws/sns" in key_id:
            return f"{topic_id} is encrypted with the AWS-managed aws/sns key, which CloudWatch cannot use"
        return None  # a key outside this stack: its policy cannot be read here
    key_policy = stack.resolve(keys[match.group(1)].key_policy) or {}
    for action in KEY_ACTIONS:
        if not allowed([key_policy], Request(CLOUDWATCH_PRINCIPAL, action, "*", context)):
            return f"the key policy of {match.group(1)} does not let {CLOUDWATCH_PRINCIPAL} {action} for this alarm"
    return None


def alarm_topics(stack: Stack, alarm: Any) -> list[str | None]:
    """Topics named by an alarm's ALARM, OK and INSUFFICIENT_DATA actions."""
    return [
        *_topic_ids_of(stack, alarm.alarm_actions),
        *_topic_ids_of(stack, alarm.ok_actions),
        *_topic_ids_of(stack, alarm.insufficient_data_actions),
    ]
