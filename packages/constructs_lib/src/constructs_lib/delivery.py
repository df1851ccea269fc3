"""Synth-time proof that every alarm's SNS action can be delivered: alarm -> action -> topic ->
topic policy and key policy, evaluated as SNS and KMS would for ``cloudwatch.amazonaws.com``.

Why hand-written: cdk-nag's SNS rules check that a topic is encrypted and refuses non-TLS
publishing (AwsSolutions-SNS2/SNS3), not that the publisher the topic exists for is still allowed;
no maintained library evaluates resource policies offline (IAM's policy simulator is an AWS
call). What this needs is small: explicit Deny wins, then an applicable Allow, else refused
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html). Conditions are
decided by :mod:`iam_conditions` (every operator of AWS's reference, ``IfExists``, ``ForAnyValue``/``ForAllValues``,
missing keys as AWS documents them), which the local emulator uses too; what it cannot decide fails closed
(a Deny applies, an Allow does not) and the error names the statement.

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

Intrinsics are opaque tokens: ``{"Ref": "AWS::AccountId"}`` on the policy side equals the same on the request
side, so a condition on this account's alarms holds; against a literal (``"123456789012"``) it is undecided.
The alarm's ARN is the one CloudWatch sends, ``arn:<partition>:cloudwatch:<region>:<account>:alarm:<name>``:
a name the template sets is used; an unnamed alarm is named by CloudFormation ``<stack name>-<logical ID>-<random>``
(https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-properties-name.html), of which only
``<stack name>-`` is taken as known, so ``alarm:<stack>-*`` matches and a pattern on the rest is judged closed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from aws_cdk import Stack, Token

from iam_conditions import Unknown, evaluate, token

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


#: Intrinsics (``<Ref:AWS::AccountId>``...) become opaque tokens for :mod:`iam_conditions`: equal to themselves
#: wherever they appear, undecided against a literal (the account may be the very ID a policy names).
_INTRINSIC = re.compile(r"<[^<>]*>")
_TOKENS: dict[str, str] = {}


def _token_for(intrinsic: str) -> str:
    if intrinsic not in _TOKENS:
        _TOKENS[intrinsic] = token(len(_TOKENS))
    return _TOKENS[intrinsic]


def _opaque(text: str) -> str:
    return _INTRINSIC.sub(lambda m: _token_for(m.group(0)), text)


def _condition_values(condition: Any) -> dict[str, Any]:
    """A statement's Condition with every value rendered, intrinsics as tokens (booleans stay booleans; an
    intrinsic :func:`render` does not know, ``Fn::ImportValue`` say, is one token: undecided against any literal)."""

    def one(value: Any) -> Any:
        if isinstance(value, bool):
            return value
        if isinstance(value, dict) and not {"Ref", "Fn::GetAtt", "Fn::Join"} & set(value):
            return _token_for(json.dumps(value, sort_keys=True))
        return _opaque(render(value))

    def values(keys: Any) -> Any:
        if not isinstance(keys, dict):
            return keys
        return {k: [one(v) for v in vs] if isinstance(vs, list) else one(vs) for k, vs in keys.items()}

    return {operator: values(keys) for operator, keys in (condition or {}).items()}


def _request_value(value: str | Unknown) -> str | Unknown:
    if isinstance(value, Unknown):
        return value
    text = _opaque(value)
    return text if text == value else Unknown(text, complete=True)


@dataclass(frozen=True)
class Request:
    """One request to a resource policy: a service principal's action on a resource, with its context."""

    service: str
    action: str
    resource: str
    context: Mapping[str, str | Unknown]


def _principal_matches(statement: Mapping[str, Any], service: str) -> bool:
    principal = statement.get("Principal")
    if principal == "*":
        return True
    if not isinstance(principal, dict):
        return False
    return "*" in _strings(principal.get("AWS")) or service in _strings(principal.get("Service"))


def _targets(statement: Mapping[str, Any], request: Request) -> bool:
    """The statement names the request's principal, action and resource (its condition aside)."""
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
    )


@dataclass(frozen=True)
class Decision:
    """A resource policy's answer, and each statement whose condition could not be decided (judged closed)."""

    allowed: bool
    closed: tuple[str, ...] = ()


def _statements(documents: Iterable[Mapping[str, Any]]) -> Iterable[tuple[str, Mapping[str, Any]]]:
    """Each statement with its name for messages: its Sid, else its position."""
    for d, document in enumerate(documents):
        raw = document.get("Statement", [])
        for i, statement in enumerate(raw if isinstance(raw, list) else [raw]):
            where = f"#{i}" + (f" of policy {d}" if d else "")
            yield (repr(statement["Sid"]) if statement.get("Sid") else where), statement


def decide(documents: Iterable[Mapping[str, Any]], request: Request) -> Decision:
    """An applicable Deny refuses, else an applicable Allow allows. A condition that cannot be decided fails
    closed: its Deny applies, its Allow does not, and the statement is named in :attr:`Decision.closed`."""
    context = {key: _request_value(value) for key, value in request.context.items()}
    allow, closed = False, []
    for name, statement in _statements(documents):
        if not _targets(statement, request):
            continue
        effect = statement.get("Effect")
        verdict = evaluate(_condition_values(statement.get("Condition")), context)
        if verdict.holds is None:
            closed.append(f"statement {name} ({effect}): {'; '.join(verdict.reasons)}")
        if not (verdict.holds if verdict.holds is not None else effect == "Deny"):
            continue
        if effect == "Deny":
            return Decision(False, tuple(closed))
        allow = allow or effect == "Allow"
    return Decision(allow, tuple(closed))


def allowed(documents: Iterable[Mapping[str, Any]], request: Request) -> bool:
    """A resource policy's decision (:func:`decide`)."""
    return decide(documents, request).allowed


def _refusal(what: str, decision: Decision) -> str:
    closed = f" (judged closed: {' and '.join(decision.closed)})" if decision.closed else ""
    return f"{what}{closed}"


def alarm_source_arn(stack: Stack, alarm: Any) -> Unknown:
    """``aws:SourceArn`` as CloudWatch sends it for ``alarm`` (see the module's docstring for the name)."""
    base = "arn:<Ref:AWS::Partition>:cloudwatch:<Ref:AWS::Region>:<Ref:AWS::AccountId>:alarm:"
    name = stack.resolve(alarm.alarm_name)
    if name is not None:
        return Unknown(_opaque(base + render(name)), complete=True)
    known = "" if Token.is_unresolved(stack.stack_name) else f"{stack.stack_name}-"
    return Unknown(_opaque(base + known), complete=False)


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
    alarm: Any,
    topic_id: str,
    topics: Mapping[str, Any],
    policies: Mapping[str, list[Any]],
    keys: Mapping[str, Any],
) -> str | None:
    """Why CloudWatch could not publish ``alarm``'s notification to ``topic_id``, or None."""
    account = "<Ref:AWS::AccountId>"
    context: dict[str, str | Unknown] = {
        "aws:SourceArn": alarm_source_arn(stack, alarm),
        "aws:SourceAccount": account,
        "aws:SecureTransport": "true",
    }
    topic = topics.get(topic_id)
    if topic is None:
        return f"action names {topic_id}, which is not an SNS topic of this stack"
    documents = policies.get(topic_id)
    publish = Request(CLOUDWATCH_PRINCIPAL, PUBLISH, f"<Ref:{topic_id}>", context)
    decision = decide(documents, publish) if documents is not None else Decision(True)
    if not decision.allowed:
        what = f"the topic policy of {topic_id} does not let {CLOUDWATCH_PRINCIPAL} sns:Publish for this alarm"
        return _refusal(what, decision)
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
        decision = decide([key_policy], Request(CLOUDWATCH_PRINCIPAL, action, "*", context))
        if not decision.allowed:
            what = f"the key policy of {match.group(1)} does not let {CLOUDWATCH_PRINCIPAL} {action} for this alarm"
            return _refusal(what, decision)
    return None


def alarm_topics(stack: Stack, alarm: Any) -> list[str | None]:
    """Topics named by an alarm's ALARM, OK and INSUFFICIENT_DATA actions."""
    return [
        *_topic_ids_of(stack, alarm.alarm_actions),
        *_topic_ids_of(stack, alarm.ok_actions),
        *_topic_ids_of(stack, alarm.insufficient_data_actions),
    ]
