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
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from local_cloud.alarm_actions import CLOUDWATCH, AlarmActions
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
