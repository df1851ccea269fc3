"""Least privilege, proven by use: every AWS call a function (or the state machine) makes in a local
run is authorized against that principal's role in the synthesized template, before it reaches moto.

How: ``BaseClient._make_api_call`` is wrapped at class level while :func:`enforce_iam` is active, so
every client is covered, whichever session made it (Powertools builds its own). The caller is a
context variable: set by :class:`~ops.local.deploy.LocalFunction` invocations (cold start included),
by the SQS event source mapping (Lambda polls with the function's role), and by Step Functions'
Lambda tasks (the state machine's role). Calls with no caller (the runner, the operator CLI, a
producer) are not checked. A call the role does not allow raises what AWS raises: a
``ClientError`` with the service's access-denied code, so the handlers' error handling runs.

Platform use of a role is checked too, without failing the call (AWS drops logs or traces silently):
Lambda writing the function's logs and X-Ray segments on each invocation, and Step Functions' log
delivery and tracing grants at deployment.
"""

from __future__ import annotations

import contextvars
import threading
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from unittest import mock

from ops.local.iam import Decision, Policy, policy_from_documents, wildcard_match
from ops.local.iam_calls import Check, checks_for
from ops.local.template import ACCOUNT, REGION

if TYPE_CHECKING:
    from ops.local.deploy import LocalDeployment

#: (principal key, platform use?) of the code running now; None: the runner itself (unchecked).
CALLER: contextvars.ContextVar[tuple[str, bool] | None] = contextvars.ContextVar("iam_caller", default=None)

#: Service -> (error code, HTTP status) AWS returns for an unauthorized call.
DENIED_ERRORS: dict[str, tuple[str, int]] = {
    "sqs": ("AccessDenied", 403),
    "sns": ("AuthorizationError", 403),
    "cloudwatch": ("AccessDenied", 403),
    "lambda": ("AccessDeniedException", 403),
    "kms": ("AccessDeniedException", 400),
}
DEFAULT_DENIED_ERROR = ("AccessDeniedException", 400)

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
STATES_TRACING = ("xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules", "xray:GetSamplingTargets")
LAMBDA_TRACING = ("xray:PutTraceSegments", "xray:PutTelemetryRecords")
MAX_EXAMPLES = 5


@dataclass
class Principal:
    """A function or state machine, its role, and what it did with it."""

    key: str
    kind: str  # "function" | "state_machine"
    role_id: str | None
    role_name: str
    policy: Policy
    platform_checks: list[Check] = field(default_factory=list)
    calls: int = 0
    platform_calls: int = 0
    denied: Counter[tuple[str, str]] = field(default_factory=Counter)
    unmapped: Counter[str] = field(default_factory=Counter)
    used: set[Check] = field(default_factory=set)

    def report(self) -> dict[str, Any]:
        denied = [
            {"action": a, "resource": r, "count": n} for (a, r), n in self.denied.most_common(MAX_EXAMPLES)
        ]
        return {
            "kind": self.kind,
            "role": self.role_id,
            "calls": self.calls,
            "platform_calls": self.platform_calls,
            "denied": {"count": sum(self.denied.values()), "first": denied},
            "unmapped": {"count": sum(self.unmapped.values()), "operations": dict(self.unmapped)},
            "granted_unused": self.granted_unused(),
            "unsupported_conditions": self.policy.unsupported,
        }

    def granted_unused(self) -> list[dict[str, Any]]:
        """Each granted action with the resource patterns no allowed call matched."""
        unused: dict[str, list[str]] = {}
        for action, resource in self.policy.grants():
            hit = any(
                wildcard_match(action, a, ignore_case=True) and wildcard_match(resource, r) for a, r in self.used
            )
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


def role_policies(deployment: LocalDeployment) -> dict[str, Policy]:
    """Every template role's identity policies (AWS::IAM::Policy, ManagedPolicy, inline), resolved."""
    docs: dict[str, list[dict[str, Any]]] = {}
    resolve = deployment.resolve
    names = {v: k for k, v in deployment.refs.items()}

    def role_ids(roles: list[Any]) -> list[str]:
        resolved = [str(resolve(r)) for r in roles]
        return [names.get(name, name) for name in resolved]

    for r in deployment.assembly.resources():
        p = r.properties
        if r.type in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            doc = resolve(_sub_attrs(p.get("PolicyDocument", {}), deployment.attrs))
            for role in role_ids(p.get("Roles", [])):
                docs.setdefault(role, []).append(doc)
        elif r.type == "AWS::IAM::Role":
            docs.setdefault(r.logical_id, [])
            for inline in p.get("Policies", []):
                docs[r.logical_id].append(resolve(_sub_attrs(inline["PolicyDocument"], deployment.attrs)))
            for managed in p.get("ManagedPolicyArns", []):
                ref = managed.get("Ref") if isinstance(managed, dict) else None
                if ref and deployment.assembly.template["Resources"].get(ref, {}).get("Type") == (
                    "AWS::IAM::ManagedPolicy"
                ):
                    continue  # attached through its own Roles property, or below
                # AWS managed policies' documents are not in the template: their grants stay unknown (deny).
    return {role: policy_from_documents(d) for role, d in docs.items()}


def _role_id(value: Any) -> str | None:
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        att = value["Fn::GetAtt"]
        return str(att[0] if isinstance(att, list) else att.split(".")[0])
    return None


def principals(deployment: LocalDeployment) -> dict[str, Principal]:
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
        name = deployment.attrs[(lid, "Name")]
        out[arn] = Principal(
            arn, "state_machine", role, _role_name(deployment, role), policies.get(role or "", Policy()), checks
        )
    return out


def _role_name(deployment: LocalDeployment, role: str | None) -> str:
    return deployment.refs.get(role or "", "unknown-role")


class IamEnforcer:
    """Authorizes calls per principal; caches decisions per (role, action, resource)."""

    def __init__(self, deployment: LocalDeployment) -> None:
        self.principals = principals(deployment)
        self._decisions: dict[tuple[str | None, str, str], Decision] = {}
        self._lock = threading.Lock()
        self.state_machine = next(iter(deployment.state_machines.values()), None)

    def decide(self, principal: Principal, action: str, resource: str) -> Decision:
        key = (principal.role_id, action, resource)
        decision = self._decisions.get(key)
        if decision is None:
            decision = self._decisions[key] = principal.policy.evaluate(action, resource)
        return decision

    def record(self, principal: Principal, checks: list[Check], platform: bool) -> tuple[Check, Decision] | None:
        """Decide every check; record use and denials; return the first denied check, if any."""
        first_denied = None
        decisions = [(check, self.decide(principal, *check)) for check in checks]
        with self._lock:
            if platform:
                principal.platform_calls += 1
            else:
                principal.calls += 1
            for check, decision in decisions:
                if decision is Decision.ALLOW:
                    principal.used.add(check)
                else:
                    principal.denied[check] += 1
                    first_denied = first_denied or (check, decision)
        return first_denied

    def authorize(self, client: Any, operation: str, params: Mapping[str, Any]) -> None:
        """Raise the service's access-denied ClientError if the current caller's role refuses the call."""
        caller = CALLER.get()
        if caller is None:
            return
        principal = self.principals.get(caller[0])
        if principal is None:
            return
        service = client.meta.service_model.service_name
        checks, mapped = checks_for(service, operation, params, client.meta.region_name or REGION)
        if not mapped:
            with self._lock:
                principal.unmapped[f"{service}:{operation}"] += 1
        denied = self.record(principal, checks, caller[1])
        if denied is not None:
            raise access_denied(client, operation, principal, *denied)

    def platform(self, key: str) -> None:
        """The role's use by the platform itself (logs, traces): recorded, never raised."""
        principal = self.principals.get(key)
        if principal is not None and principal.platform_checks:
            self.record(principal, principal.platform_checks, platform=True)

    def report(self) -> dict[str, Any]:
        return {key.rsplit(":", 1)[-1]: p.report() for key, p in sorted(self.principals.items())}


def access_denied(client: Any, operation: str, principal: Principal, check: Check, decision: Decision) -> Exception:
    """The ClientError AWS returns, with its code, status and message shape."""
    action, resource = check
    service = client.meta.service_model.service_name
    code, status = DENIED_ERRORS.get(service, DEFAULT_DENIED_ERROR)
    why = (
        "with an explicit deny in an identity-based policy"
        if decision is Decision.EXPLICIT_DENY
        else f"because no identity-based policy allows the {action} action"
    )
    session = principal.key.rsplit(":", 1)[-1]
    message = (
        f"User: arn:aws:sts::{ACCOUNT}:assumed-role/{principal.role_name}/{session} "
        f"is not authorized to perform: {action} on resource: {resource} {why}"
    )
    response = {
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": status, "RequestId": str(uuid.uuid4())},
    }
    error_class = client.exceptions.from_code(code)
    exc: Exception = error_class(response, operation)
    return exc


@contextmanager
def acting_as(key: str, platform: bool = False) -> Iterator[None]:
    """Run the block as ``key`` (a function's physical name or a state machine ARN)."""
    token = CALLER.set((key, platform))
    try:
        yield
    finally:
        CALLER.reset(token)


class _StateMachineClient:
    """The Lambda client Step Functions' tasks use, calling as the state machine's role."""

    def __init__(self, client: Any, key: str) -> None:
        self._client = client
        self._key = key

    def invoke(self, **kwargs: Any) -> Any:
        with acting_as(self._key):
            return self._client.invoke(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


@contextmanager
def enforce_iam(deployment: LocalDeployment) -> Iterator[IamEnforcer]:
    """Check every call of the deployment's functions and state machine against their roles."""
    import botocore.client
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils

    from ops.local.deploy import LocalFunction
    from ops.local.event_sources import SqsPoller

    enforcer = IamEnforcer(deployment)
    for key, principal in enforcer.principals.items():
        if principal.kind == "state_machine":
            enforcer.platform(key)  # log delivery and tracing, used when the state machine is created

    original_call = botocore.client.BaseClient._make_api_call
    original_invoke = LocalFunction.invoke
    original_poll, original_release = SqsPoller.poll_once, SqsPoller.release_due
    original_client_for = lambda_eval_utils.boto_client_for

    def make_api_call(client: Any, operation: str, params: Any) -> Any:
        if CALLER.get() is not None:
            enforcer.authorize(client, operation, params)
        return original_call(client, operation, params)

    def invoke(fn: LocalFunction, event: Any) -> tuple[str, bool]:
        with acting_as(fn.name):
            enforcer.platform(fn.name)
            return original_invoke(fn, event)

    def poll_once(poller: SqsPoller) -> int:
        with acting_as(poller.spec.function.name, platform=True):  # the event source mapping's polling
            return original_poll(poller)

    def release_due(poller: SqsPoller) -> int:
        with acting_as(poller.spec.function.name, platform=True):
            return original_release(poller)

    def client_for(*args: Any, **kwargs: Any) -> Any:
        client = original_client_for(*args, **kwargs)
        return _StateMachineClient(client, enforcer.state_machine) if enforcer.state_machine else client

    with ExitStack() as stack:
        stack.enter_context(mock.patch.object(botocore.client.BaseClient, "_make_api_call", make_api_call))
        stack.enter_context(mock.patch.object(LocalFunction, "invoke", invoke))
        stack.enter_context(mock.patch.object(SqsPoller, "poll_once", poll_once))
        stack.enter_context(mock.patch.object(SqsPoller, "release_due", release_due))
        stack.enter_context(mock.patch.object(lambda_eval_utils, "boto_client_for", client_for))
        deployment.iam = enforcer
        yield enforcer
