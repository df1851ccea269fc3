"""The principals of a deployment, as IAM sees them: each function and state machine, its role's identity
policies resolved from the synthesized template, the platform's own uses of the role, and what each did with
it (calls, denials, grants never used). :mod:`local_cloud.iam_enforce` authorizes calls against them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from local_cloud.iam import Policy, policy_from_documents, wildcard_match
from local_cloud.iam_calls import Check
from local_cloud.interfaces import Deployment
from local_cloud.template import ACCOUNT, REGION

#: Step Functions' documented grants for a logging configuration (CloudWatch Logs vended delivery).
STATES_LOG_DELIVERY = (
    "logs:CreateLogDelivery",
    "logs:GetLogDelivery",
    "logs:UpdateLogDelivery",
    "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries",
    "logs:PutResourcePolicy",
    "logs:DescribeResourcePolicies",
    "logs:DescribeLogGroups",
)
STATES_TRACING = (
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
    "xray:GetSamplingRules",
    "xray:GetSamplingTargets",
)
LAMBDA_TRACING = ("xray:PutTraceSegments", "xray:PutTelemetryRecords")
MAX_EXAMPLES = 5


@dataclass
class Principal:
    """A function or state machine, its role, and what it did with it."""

    key: str
    kind: str  # "function" | "state_machine" | "api_integration"
    role_id: str | None
    role_name: str
    policy: Policy
    platform_checks: list[Check] = field(default_factory=list)  # per invocation
    deploy_checks: list[Check] = field(default_factory=list)  # once, when the resource is created
    calls: int = 0
    platform_calls: int = 0
    denied: Counter[tuple[str, str]] = field(default_factory=Counter)
    unmapped: Counter[str] = field(default_factory=Counter)
    used: set[Check] = field(default_factory=set)
    unknown_managed_policies: list[str] = field(default_factory=list)  # AWS managed: documents not in the template

    def report(self) -> dict[str, Any]:
        denied = [{"action": a, "resource": r, "count": n} for (a, r), n in self.denied.most_common(MAX_EXAMPLES)]
        return {
            "kind": self.kind,
            "role": self.role_id,
            "calls": self.calls,
            "platform_calls": self.platform_calls,
            "denied": {"count": sum(self.denied.values()), "first": denied},
            "unmapped": {"count": sum(self.unmapped.values()), "operations": dict(self.unmapped)},
            "granted_unused": self.granted_unused(),
            "unsupported_conditions": self.policy.unsupported,
            "unknown_managed_policies": self.unknown_managed_policies,
        }

    def granted_unused(self) -> list[dict[str, Any]]:
        """Each granted action with the resource patterns no allowed call matched."""
        unused: dict[str, list[str]] = {}
        for action, resource in self.policy.grants():
            hit = any(wildcard_match(action, a, ignore_case=True) and wildcard_match(resource, r) for a, r in self.used)
            if not hit:
                unused.setdefault(action, []).append(resource)
        return [{"action": a, "resources": sorted(set(rs))} for a, rs in sorted(unused.items())]


def _sub_attrs(value: Any, attrs: Mapping[tuple[str, str], str]) -> Any:
    """``${Logical.Attr}`` in Fn::Sub strings (the shared Resolver knows ``${Ref}`` only)."""
    if isinstance(value, list):
        return [_sub_attrs(v, attrs) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: _sub_attrs(v, attrs) for k, v in value.items()}
    sub = out.get("Fn::Sub")
    if len(out) == 1 and sub is not None:
        text = sub if isinstance(sub, str) else sub[0]
        for (lid, attr), val in attrs.items():
            text = text.replace("${" + f"{lid}.{attr}" + "}", val)
        out["Fn::Sub"] = text if isinstance(sub, str) else [text, *sub[1:]]
    return out


def role_policies(deployment: Deployment) -> dict[str, Policy]:
    """Every template role's identity policies (AWS::IAM::Policy, ManagedPolicy, inline), resolved."""
    docs: dict[str, list[dict[str, Any]]] = {}
    managed: dict[str, dict[str, Any]] = {}
    names = {v: k for k, v in deployment.refs.items()}

    def document(raw: Any) -> dict[str, Any]:
        resolved: dict[str, Any] = deployment.resolve(_sub_attrs(raw, deployment.attrs))
        return resolved

    for r in deployment.assembly.resources():
        p = r.properties
        if r.type in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            doc = managed[r.logical_id] = document(p.get("PolicyDocument", {}))
            for role in p.get("Roles", []):
                name = str(deployment.resolve(role))
                docs.setdefault(names.get(name, name), []).append(doc)
        elif r.type == "AWS::IAM::Role":
            docs.setdefault(r.logical_id, []).extend(document(i["PolicyDocument"]) for i in p.get("Policies", []))
    # Customer managed policies attached by the role's ManagedPolicyArns. AWS managed policies'
    # documents are not in the template: their grants are unknown here, so they allow nothing.
    for r in deployment.assembly.resources("AWS::IAM::Role"):
        for arn in r.properties.get("ManagedPolicyArns", []):
            ref = arn.get("Ref") if isinstance(arn, dict) else None
            if ref in managed and managed[ref] not in docs[r.logical_id]:
                docs[r.logical_id].append(managed[ref])
    return {role: policy_from_documents(d) for role, d in docs.items()}


def _role_id(value: Any) -> str | None:
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        att = value["Fn::GetAtt"]
        return str(att[0] if isinstance(att, list) else att.split(".")[0])
    return None


def principals(deployment: Deployment) -> dict[str, Principal]:
    """One principal per deployed function (by physical name) and state machine (by ARN)."""
    policies = role_policies(deployment)
    out: dict[str, Principal] = {}
    for fn in deployment.functions.values():
        props = deployment.assembly.resource(fn.logical_id).properties
        role = _role_id(props.get("Role"))
        group = deployment.log_group_of(fn) or f"/aws/lambda/{fn.name}"
        stream = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:{group}:log-stream:local"
        checks = [("logs:CreateLogStream", stream), ("logs:PutLogEvents", stream)]
        if (props.get("TracingConfig") or {}).get("Mode") == "Active":
            checks += [(action, "*") for action in LAMBDA_TRACING]
        out[fn.name] = Principal(
            fn.name, "function", role, _role_name(deployment, role), policies.get(role or "", Policy()), checks
        )
    for lid, arn in deployment.state_machines.items():
        props = deployment.assembly.resource(lid).properties
        role = _role_id(props.get("RoleArn"))
        checks = []
        if (props.get("LoggingConfiguration") or {}).get("Destinations"):
            checks += [(action, "*") for action in STATES_LOG_DELIVERY]
        if (props.get("TracingConfiguration") or {}).get("Enabled"):
            checks += [(action, "*") for action in STATES_TRACING]
        out[arn] = Principal(
            arn, "state_machine", role, _role_name(deployment, role), policies.get(role or "", Policy())
        )
        out[arn].deploy_checks = checks
    for principal in out.values():
        principal.unknown_managed_policies = _unknown_managed(deployment, principal.role_id)
    for spec in deployment.event_sources:  # Lambda reads the queue's attributes when the mapping is created
        out[spec.function.name].deploy_checks.append(("sqs:GetQueueAttributes", spec.queue_arn))
    return out


def _role_name(deployment: Deployment, role: str | None) -> str:
    return deployment.refs.get(role or "", "unknown-role")


def _unknown_managed(deployment: Deployment, role: str | None) -> list[str]:
    """The role's ManagedPolicyArns that are not template resources (their grants count as none)."""
    if role is None:
        return []
    arns = deployment.assembly.resource(role).properties.get("ManagedPolicyArns", [])
    template = deployment.assembly.template["Resources"]
    return [
        str(deployment.resolve(a))
        for a in arns
        if not (isinstance(a, dict) and template.get(a.get("Ref", ""), {}).get("Type") == "AWS::IAM::ManagedPolicy")
    ]
