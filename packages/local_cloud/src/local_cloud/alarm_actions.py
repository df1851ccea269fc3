"""Alarm actions executed as CloudWatch executes them: moto stores an alarm's actions, never runs them.

On a state change CloudWatch publishes the alarm's notification to each SNS action of the new
state (``AlarmActions`` on ALARM, ``OKActions`` on OK, ``InsufficientDataActions`` on INSUFFICIENT_DATA)
*as the service principal* ``cloudwatch.amazonaws.com``, with ``aws:SourceArn`` = the alarm's ARN
and ``aws:SourceAccount``,
over TLS (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Notify_Users_Alarm_Changes.html).
SNS then evaluates the topic's resource policy (a topic policy replaces the default one, which
lets the owning account publish: https://docs.aws.amazon.com/sns/latest/dg/sns-access-policy-use-cases.html)
and, for an encrypted topic, KMS evaluates the key policy for ``kms:GenerateDataKey`` and
``kms:Decrypt`` (https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html). A refused
action is recorded in the alarm's history ("Failed to execute action ...") and reaches nobody.

A delivered notification is published to the moto topic (its SQS subscribers receive it) and kept
as a :class:`Notice` in :attr:`AlarmActions.history`, the page log a person reads.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from local_cloud.clients import aws
from local_cloud.iam import Decision, Policy, Statement
from local_cloud.interfaces import Deployment
from local_cloud.template import ACCOUNT, REGION

CLOUDWATCH = "cloudwatch.amazonaws.com"
#: What CloudWatch needs of an encrypted topic's key (SNS key management page above).
KEY_ACTIONS = ("kms:GenerateDataKey", "kms:Decrypt")


@dataclass(frozen=True)
class Notice:
    """One alarm action executed: delivered to the topic's subscribers, or refused (``refusal``)."""

    alarm: str
    state: str
    at: float  # simulated time, seconds since the epoch
    reason: str
    topic: str
    refusal: str | None = None

    @property
    def delivered(self) -> bool:
        return self.refusal is None


def _principal_is(statement: Mapping[str, Any], service: str) -> bool:
    principal = statement.get("Principal")
    if principal == "*":
        return True
    if not isinstance(principal, dict):
        return False
    values = [principal.get("AWS"), principal.get("Service")]
    flat = [str(v) for value in values for v in (value if isinstance(value, list) else [value]) if v is not None]
    return "*" in flat or service in flat


def resource_policy_for(documents: Iterable[Mapping[str, Any]], service: str) -> Policy:
    """The statements of resource policies that name ``service`` (or everyone) as principal."""
    statements = []
    for document in documents:
        raw = document.get("Statement", [])
        for s in raw if isinstance(raw, list) else [raw]:
            if _principal_is(s, service):
                statements.append(Statement.parse({**s, "Resource": s.get("Resource", "*")}))
    return Policy(statements)


@dataclass(frozen=True)
class _Topic:
    policy: Policy | None  # None: no topic policy, SNS's default one (the account's own services publish)
    key: str | None  # the key's logical ID
    key_policy: Policy | None


class AlarmActions:
    """The template's topics with their topic and key policies; executes alarm actions on them."""

    def __init__(self, deployment: Deployment) -> None:
        d = deployment
        self.clock = d.clock
        policies: dict[str, list[Mapping[str, Any]]] = {}
        for r in d.assembly.resources("AWS::SNS::TopicPolicy"):
            p = d.resolve(r.properties)
            for arn in p.get("Topics", []):
                policies.setdefault(str(arn), []).append(p["PolicyDocument"])
        keys = {
            d.attrs[(r.logical_id, "Arn")]: (r.logical_id, d.resolve(r.properties).get("KeyPolicy", {}))
            for r in d.assembly.resources("AWS::KMS::Key")
        }
        self.topics: dict[str, _Topic] = {}
        for r in d.assembly.resources("AWS::SNS::Topic"):
            arn = d.refs[r.logical_id]
            key_ref = d.resolve(r.properties).get("KmsMasterKeyId")
            key_id, key_doc = keys.get(str(key_ref), (None, None)) if key_ref else (None, None)
            self.topics[arn] = _Topic(
                policy=resource_policy_for(policies[arn], CLOUDWATCH) if arn in policies else None,
                key=key_id or (str(key_ref) if key_ref else None),
                key_policy=resource_policy_for([key_doc], CLOUDWATCH) if key_doc is not None else None,
            )
        self.history: list[Notice] = []

    def refusal(self, alarm_name: str, topic_arn: str) -> str | None:
        """Why CloudWatch's publish for ``alarm_name`` to ``topic_arn`` is refused, or None."""
        topic = self.topics.get(topic_arn)
        if topic is None:
            return f"topic {topic_arn} does not exist"
        context = {
            "aws:SourceArn": f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:{alarm_name}",
            "aws:SourceAccount": ACCOUNT,
            "aws:SecureTransport": "true",
        }
        if topic.policy is not None and topic.policy.evaluate("sns:Publish", topic_arn, context) != Decision.ALLOW:
            return (
                f"{CLOUDWATCH} is not authorized to perform: SNS:Publish on resource: {topic_arn} "
                "because no resource-based policy allows the SNS:Publish action"
            )
        if topic.key is not None:
            if topic.key_policy is None:
                return f"the key {topic.key} of {topic_arn} is not one whose policy lets {CLOUDWATCH} use it"
            for action in KEY_ACTIONS:
                if topic.key_policy.evaluate(action, "*", context) != Decision.ALLOW:
                    return f"{CLOUDWATCH} is not authorized to perform: {action} on the key of {topic_arn}"
        return None

    def execute(
        self, alarm: Mapping[str, Any], old: str, new: str, reason: str, at: float | None = None
    ) -> list[Notice]:
        """Run the actions of ``alarm``'s new state (ALARM, OK or INSUFFICIENT_DATA) at simulated time ``at`` (default
        now): publish, or record the refusal."""
        actions = alarm.get({"ALARM": "AlarmActions", "OK": "OKActions"}.get(new, "InsufficientDataActions"), [])
        notices = []
        for arn in actions:
            if ":sns:" not in str(arn):
                continue
            refusal = self.refusal(alarm["AlarmName"], str(arn))
            notice = Notice(alarm["AlarmName"], new, self.clock.now() if at is None else at, reason, str(arn), refusal)
            if refusal is None:
                aws("sns").publish(
                    TopicArn=str(arn), Subject=_subject(alarm, new), Message=_message(alarm, old, notice)
                )
            notices.append(notice)
        self.history.extend(notices)
        return notices


def _subject(alarm: Mapping[str, Any], new: str) -> str:
    return f'{new}: "{alarm["AlarmName"]}" in {REGION}'[:100]


def _message(alarm: Mapping[str, Any], old: str, notice: Notice) -> str:
    """The JSON body CloudWatch publishes (the fields a subscriber reads)."""
    return json.dumps(
        {
            "AlarmName": alarm["AlarmName"],
            "AlarmDescription": alarm.get("AlarmDescription", ""),
            "AWSAccountId": ACCOUNT,
            "NewStateValue": notice.state,
            "NewStateReason": notice.reason,
            "StateChangeTime": datetime.fromtimestamp(notice.at, UTC).isoformat(),
            "Region": REGION,
            "AlarmArn": f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:{alarm['AlarmName']}",
            "OldStateValue": old,
            "Trigger": {"MetricName": alarm.get("MetricName"), "Namespace": alarm.get("Namespace")},
        }
    )
