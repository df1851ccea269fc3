"""The IAM checks both engines decide: each call a recorded local run made (principal, action, resource), and
each alarm's publish path (the topic policy for ``sns:Publish``, the key policy for ``kms:Decrypt`` and
``kms:GenerateDataKey*``, as CloudWatch sends them), on a deployed template (dev or prod).

The emulator's verdict comes from its own objects: the principals' policies
(:func:`local_cloud.iam_principals.principals`) and the topics' policies
(:class:`local_cloud.alarm_actions.AlarmActions`). The simulator gets the same documents, resolved by the
emulator's deployment, as ``@cloud-copilot/iam-simulate`` simulations.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from local_cloud.alarm_actions import CLOUDWATCH, AlarmActions, resource_policy_for
from local_cloud.iam import Decision
from local_cloud.iam_principals import principals
from local_cloud.interfaces import Deployment
from local_cloud.template import ACCOUNT, REGION

Verdict = Decision
#: iam-simulate's answer for each of the emulator's decisions.
SIMULATOR_NAMES = {
    Decision.ALLOW: "Allowed",
    Decision.IMPLICIT_DENY: "ImplicitlyDenied",
    Decision.EXPLICIT_DENY: "ExplicitlyDenied",
}
STACK_TOKEN = "{stack}"
#: CloudWatch's actions on an encrypted topic's key (SNS's key management page; what alarm_actions checks).
KEY_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKey")
#: The request context of every call: over TLS (the template's Deny-without-TLS statements do not apply).
TLS = {"aws:SecureTransport": "true"}


class Kind(enum.Enum):
    CALL = "call"  # a recorded call, asked of the role that made it
    OTHER_ROLE = "other_role"  # a recorded call, asked of a role that did not make it (mostly denials)
    ALARM = "alarm"
    VARIANT = "variant"  # an alarm's publish under a topic policy guardrail (POLICY_VARIANTS)


@dataclass(frozen=True)
class Check:
    """One request both engines decide: ``emulator`` is the emulator's decision, ``simulation`` iam-simulate's input."""

    id: str
    kind: Kind
    emulator: Decision
    simulation: dict[str, Any]


def tokenise(resource: str, stack: str) -> str:
    """A recorded resource ARN with the stack's name as a token, to carry it to another stage."""
    return resource.replace(stack, STACK_TOKEN)


def to_stage(resource: str, stack: str) -> str:
    return resource.replace(STACK_TOKEN, stack)


_PUBLISH = {"Action": "sns:Publish"}
_ALARMS = f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:{STACK_TOKEN}-*"
_CLOUDWATCH = {"Service": CLOUDWATCH}
#: Guardrails a team adds to a topic policy (issue 43's fail-open forms among them); ``{stack}`` is the stage's stack.
POLICY_VARIANTS: dict[str, dict[str, Any]] = {
    "deny-org-string-not-equals": {
        "Effect": "Deny",
        "Principal": "*",
        **_PUBLISH,
        "Condition": {"StringNotEquals": {"aws:PrincipalOrgID": "o-exampleorgid"}},
    },
    "deny-org-string-not-equals-if-exists": {
        "Effect": "Deny",
        "Principal": "*",
        **_PUBLISH,
        "Condition": {"StringNotEqualsIfExists": {"aws:PrincipalOrgID": "o-exampleorgid"}},
    },
    "deny-org-for-any-value": {
        "Effect": "Deny",
        "Principal": "*",
        **_PUBLISH,
        "Condition": {"ForAnyValue:StringLike": {"aws:PrincipalOrgPaths": ["o-exampleorgid/*"]}},
    },
    "allow-account-ignore-case": {
        "Effect": "Allow",
        "Principal": _CLOUDWATCH,
        **_PUBLISH,
        "Condition": {"StringEqualsIgnoreCase": {"aws:SourceAccount": ACCOUNT}},
    },
    "allow-stage-alarms-only": {
        "Effect": "Allow",
        "Principal": _CLOUDWATCH,
        **_PUBLISH,
        "Condition": {"ArnLike": {"aws:SourceArn": _ALARMS}},
    },
    "deny-other-stage-alarms": {
        "Effect": "Deny",
        "Principal": "*",
        **_PUBLISH,
        "Condition": {"ArnNotLike": {"aws:SourceArn": _ALARMS}},
    },
    "deny-without-source-arn": {
        "Effect": "Deny",
        "Principal": "*",
        **_PUBLISH,
        "Condition": {"Null": {"aws:SourceArn": "true"}},
    },
}


def variant_document(base: dict[str, Any], statement: dict[str, Any], topic: str, stack: str) -> dict[str, Any]:
    """``base``'s Deny statements, the variant's statement on ``topic``, and (for a Deny variant) an Allow for
    CloudWatch, so that only the variant decides."""
    text = json.dumps(statement).replace(STACK_TOKEN, stack)
    variant = {**json.loads(text), "Resource": topic}
    statements = [st for st in base.get("Statement", []) if st.get("Effect") == "Deny"] + [variant]
    if variant["Effect"] == "Deny":
        statements.append({"Effect": "Allow", "Principal": _CLOUDWATCH, **_PUBLISH, "Resource": topic})
    return {"Version": "2012-10-17", "Statement": statements}


def other_roles(calls: list[dict[str, str]], roles: list[str]) -> list[dict[str, str]]:
    """Each distinct (action, resource) of ``calls`` as asked by every role of ``roles`` that did not make it."""
    made = {(c["role"], c["action"], c["resource"]) for c in calls}
    requests = sorted({(c["action"], c["resource"]) for c in calls})
    return [
        {"role": role, "action": action, "resource": resource}
        for role in roles
        for action, resource in requests
        if (role, action, resource) not in made
    ]


def compare_verdicts(emulator: Decision, simulator: str | None) -> bool:
    return simulator is not None and SIMULATOR_NAMES[emulator] == simulator


def _documents(deployment: Deployment, type_: str, target_key: str) -> dict[str, list[dict[str, Any]]]:
    """Resource policies (queue, topic) by the resource each applies to, resolved."""
    out: dict[str, list[dict[str, Any]]] = {}
    for r in deployment.assembly.resources(type_):
        props = deployment.resolve(r.properties)
        for target in props.get(target_key, []):
            out.setdefault(str(target), []).append(props["PolicyDocument"])
    return out


def _merge(documents: list[dict[str, Any]]) -> dict[str, Any] | None:
    statements = [
        s for d in documents for s in (d["Statement"] if isinstance(d["Statement"], list) else [d["Statement"]])
    ]
    return {"Version": "2012-10-17", "Statement": statements} if statements else None


def role_documents(deployment: Deployment) -> dict[str, list[dict[str, Any]]]:
    """Each role's identity policy documents (AWS::IAM::Policy and inline), resolved, by role logical ID."""
    names = {v: k for k, v in deployment.refs.items()}
    docs: dict[str, list[dict[str, Any]]] = {}
    for r in deployment.assembly.resources("AWS::IAM::Policy"):
        props = deployment.resolve(r.properties)
        for role in props.get("Roles", []):
            docs.setdefault(names.get(str(role), str(role)), []).append(props["PolicyDocument"])
    for r in deployment.assembly.resources("AWS::IAM::Role"):
        for inline in deployment.resolve(r.properties).get("Policies", []):
            docs.setdefault(r.logical_id, []).append(inline["PolicyDocument"])
    return docs


def _key_policies(deployment: Deployment) -> dict[str, dict[str, Any]]:
    return {
        deployment.attrs[(r.logical_id, "Arn")]: deployment.resolve(r.properties)["KeyPolicy"]
        for r in deployment.assembly.resources("AWS::KMS::Key")
    }


def _resource_policy(deployment: Deployment, action: str, resource: str) -> dict[str, Any] | None:
    """The resource policy AWS evaluates with the caller's identity policies for this request, if any."""
    service = action.split(":", 1)[0]
    if service == "kms":
        return _key_policies(deployment).get(resource)
    if service == "sqs":
        urls = {deployment.attrs.get((lid, "Arn")): url for lid, url in deployment.refs.items()}
        return _merge(_documents(deployment, "AWS::SQS::QueuePolicy", "Queues").get(str(urls.get(resource)), []))
    if service == "sns":
        return _merge(_documents(deployment, "AWS::SNS::TopicPolicy", "Topics").get(resource, []))
    return None


def _simulation(
    principal: str,
    action: str,
    resource: str,
    identity: list[dict[str, Any]],
    policy: dict[str, Any] | None,
    context: Mapping[str, str],
) -> dict[str, Any]:
    simulation: dict[str, Any] = {
        "request": {
            "principal": principal,
            "action": action,
            "resource": {"resource": resource, "accountId": ACCOUNT},
            "contextVariables": dict(context),
        },
        "identityPolicies": [{"name": f"policy-{i}", "policy": d} for i, d in enumerate(identity)],
        "serviceControlPolicies": [],
        "resourceControlPolicies": [],
    }
    if policy is not None:
        simulation["resourcePolicy"] = policy
    return simulation


def call_checks(deployment: Deployment, calls: list[dict[str, str]], kind: Kind = Kind.CALL) -> Iterator[Check]:
    """One check per recorded call whose principal's role the template has (``calls``: role, action, resource)."""
    by_role = {p.role_id: p for p in principals(deployment).values()}
    documents = role_documents(deployment)
    for call in calls:
        principal = by_role.get(call["role"])
        if principal is None:
            continue
        resource = to_stage(call["resource"], deployment.stack)
        role_arn = f"arn:aws:iam::{ACCOUNT}:role/{principal.role_name}"
        simulation = _simulation(
            role_arn,
            call["action"],
            resource,
            documents.get(call["role"], []),
            _resource_policy(deployment, call["action"], resource),
            TLS,
        )
        decision = principal.policy.evaluate(call["action"], resource, TLS)
        yield Check(f"{deployment.stack} {call['role']} {call['action']} {resource}", kind, decision, simulation)


def principal_roles(deployment: Deployment) -> list[str]:
    """The role logical IDs of the deployment's functions and state machine."""
    return sorted({str(p.role_id) for p in principals(deployment).values() if p.role_id})


def alarm_checks(deployment: Deployment) -> Iterator[Check]:
    """Each alarm action on an SNS topic: sns:Publish on the topic, and the topic's key's actions, as CloudWatch."""
    actions = AlarmActions(deployment)
    topic_policies = _documents(deployment, "AWS::SNS::TopicPolicy", "Topics")
    keys = _key_policies(deployment)
    for r in deployment.assembly.resources("AWS::CloudWatch::Alarm"):
        props = deployment.resolve(r.properties)
        name = deployment.refs[r.logical_id]
        context = {
            "aws:SourceArn": f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:{name}",
            "aws:SourceAccount": ACCOUNT,
            **TLS,
        }
        for field in ("AlarmActions", "OKActions", "InsufficientDataActions"):
            for topic_arn in (str(a) for a in props.get(field, []) if ":sns:" in str(a)):
                topic = actions.topics[topic_arn]
                policy = _merge(topic_policies.get(topic_arn, []))
                sns = topic.policy.evaluate("sns:Publish", topic_arn, context) if topic.policy else Decision.ALLOW
                sim = _simulation(CLOUDWATCH, "sns:Publish", topic_arn, [], policy, context)
                yield Check(f"{deployment.stack} {name} {field} sns:Publish {topic_arn}", Kind.ALARM, sns, sim)
                key_arn = deployment.attrs.get((topic.key or "", "Arn"))
                if key_arn is None:
                    continue
                for action in KEY_ACTIONS:
                    kms = (
                        topic.key_policy.evaluate(action, "*", context) if topic.key_policy else Decision.IMPLICIT_DENY
                    )
                    sim = _simulation(CLOUDWATCH, action, key_arn, [], keys.get(key_arn), context)
                    yield Check(f"{deployment.stack} {name} {field} {action} {key_arn}", Kind.ALARM, kms, sim)


def variant_checks(deployment: Deployment) -> Iterator[Check]:
    """Each topic's first alarm's publish under each of :data:`POLICY_VARIANTS` (its Deny statements kept)."""
    topic_policies = _documents(deployment, "AWS::SNS::TopicPolicy", "Topics")
    first_alarm: dict[str, str] = {}
    for r in deployment.assembly.resources("AWS::CloudWatch::Alarm"):
        for topic_arn in deployment.resolve(r.properties).get("AlarmActions", []):
            first_alarm.setdefault(str(topic_arn), deployment.refs[r.logical_id])
    for topic_arn, alarm in sorted(first_alarm.items()):
        base = _merge(topic_policies.get(topic_arn, [])) or {}
        context = {
            "aws:SourceArn": f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:{alarm}",
            "aws:SourceAccount": ACCOUNT,
            **TLS,
        }
        for name, statement in POLICY_VARIANTS.items():
            document = variant_document(base, statement, topic_arn, deployment.stack)
            decision = resource_policy_for([document], CLOUDWATCH).evaluate("sns:Publish", topic_arn, context)
            simulation = _simulation(CLOUDWATCH, "sns:Publish", topic_arn, [], document, context)
            yield Check(f"{deployment.stack} variant {name} {alarm} {topic_arn}", Kind.VARIANT, decision, simulation)
