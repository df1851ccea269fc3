"""Least privilege, proven by use: every AWS call a function (or the state machine) makes in a local
run is authorized against that principal's role in the synthesized template, before it reaches moto.

How: ``BaseClient._make_api_call`` is wrapped at class level while :func:`enforce_iam` is active, so
every client is covered, whichever session made it (Powertools builds its own). The caller is a
context variable: set by :class:`~local_cloud.deploy.LocalFunction` invocations (cold start included),
by the SQS event source mapping (Lambda polls with the function's role), and by Step Functions'
tasks, Lambda and direct integrations alike (the state machine's role); work a handler submits
to a ``ThreadPoolExecutor`` keeps its caller (a bare ``threading.Thread`` would not). Calls with
no caller (the runner, the operator CLI, a producer) are not checked. A call the role does not
allow raises what AWS raises: a ``ClientError`` with the service's access-denied code, so the
handlers' error handling runs.

Platform use of a role is checked too, without failing the call (AWS drops logs or traces silently):
Lambda writing the function's logs and X-Ray segments on each invocation, and Step Functions' log
delivery and tracing grants at deployment. The principals themselves (roles, policies, the platform's
uses, the report of each) are :mod:`local_cloud.iam_principals`.
"""

from __future__ import annotations

import contextvars
import threading
from collections import Counter
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

from local_cloud.errors import service_error
from local_cloud.iam import Decision, Policy
from local_cloud.iam_calls import Check, checks_for
from local_cloud.iam_principals import MAX_EXAMPLES, Principal, principals
from local_cloud.interfaces import Deployment
from local_cloud.template import ACCOUNT, REGION

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


class IamEnforcer:
    """Authorizes calls per principal; caches decisions per (role, action, resource)."""

    def __init__(self, deployment: Deployment) -> None:
        self.principals = principals(deployment)
        self._decisions: dict[tuple[str | None, str, str], Decision] = {}
        self._lock = threading.Lock()
        self.state_machine = next(iter(deployment.state_machines.values()), None)
        self.hooks: list[tuple[Any, str, Any]] = []  # (owner, attribute, hook) while enforce_iam is active

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

    def integration_principal(self, role_id: str, role_name: str, policy: Policy) -> Principal:
        """The principal of an API Gateway integration's role (``apigateway:<role name>``), created on
        first use: its calls are recorded like a function's (report, denials, unused grants)."""
        key = f"apigateway:{role_name}"
        with self._lock:
            principal = self.principals.get(key)
            if principal is None:
                principal = self.principals[key] = Principal(key, "api_integration", role_id, role_name, policy)
            return principal

    def platform(self, key: str) -> None:
        """The role's use by the platform on each invocation (logs, traces): recorded, never raised."""
        principal = self.principals.get(key)
        if principal is not None and principal.platform_checks:
            self.record(principal, principal.platform_checks, platform=True)

    def deployed(self) -> None:
        """The role's use by the platform when the resources are created (recorded, never raised)."""
        for principal in self.principals.values():
            if principal.deploy_checks:
                self.record(principal, principal.deploy_checks, platform=True)

    def displaced_hooks(self) -> list[str]:
        """The enforcement hooks (:func:`enforce_iam`) no longer in place, each with what replaced it: a
        patch of the same attribute restored out of order would leave calls unchecked and uncounted."""
        out = []
        for owner, name, hook in self.hooks:
            current = vars(owner).get(name)
            if current is not hook:
                where = getattr(current, "__module__", "?"), getattr(current, "__qualname__", repr(current))
                out.append(f"{getattr(owner, '__name__', owner)}.{name} is {'.'.join(where)}")
        return out

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
    return service_error(client, operation, code, message, status)


@contextmanager
def acting_as(key: str, platform: bool = False) -> Iterator[None]:
    """Run the block as ``key`` (a function's physical name or a state machine ARN)."""
    token = CALLER.set((key, platform))
    try:
        yield
    finally:
        CALLER.reset(token)


class _StateMachineClient:
    """A client Step Functions' tasks use (Lambda invoke, DynamoDB UpdateItem, ...): every API
    call made through it runs as the state machine's role."""

    def __init__(self, client: Any, key: str) -> None:
        self._client = client
        self._key = key

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if name.startswith("_") or not callable(attribute) or name not in self._client.meta.method_to_api_mapping:
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            with acting_as(self._key):
                return attribute(*args, **kwargs)

        return call


@contextmanager
def enforce_iam(deployment: Deployment) -> Iterator[IamEnforcer]:
    """Check every call of the deployment's functions and state machine against their roles."""
    import botocore.client

    from local_cloud.event_sources import SqsPoller
    from local_cloud.lambda_runtime import LocalFunction
    from local_cloud.moto_patches import step_functions_client_modules

    enforcer = IamEnforcer(deployment)
    enforcer.deployed()

    original_call = botocore.client.BaseClient._make_api_call
    original_invoke = LocalFunction.invoke
    original_poll, original_release = SqsPoller.poll_once, SqsPoller.release_due
    task_modules = step_functions_client_modules()

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

    submit = _keeping_caller(ThreadPoolExecutor.submit)

    enforcer.hooks = [
        (botocore.client.BaseClient, "_make_api_call", make_api_call),
        (LocalFunction, "invoke", invoke),
        (SqsPoller, "poll_once", poll_once),
        (SqsPoller, "release_due", release_due),
        *((m, "boto_client_for", _as_state_machine(m.boto_client_for, enforcer)) for m in task_modules),
        (ThreadPoolExecutor, "submit", submit),
    ]
    with ExitStack() as stack:
        for owner, name, hook in enforcer.hooks:
            stack.enter_context(mock.patch.object(owner, name, hook))
        deployment.iam = enforcer
        yield enforcer
        if displaced := enforcer.displaced_hooks():  # calls went unchecked: say so rather than report them allowed
            raise RuntimeError(f"IAM enforcement hooks replaced while active: {displaced}")


def _keeping_caller(original_submit: Any) -> Any:
    """``ThreadPoolExecutor.submit`` whose work runs as the submitting caller (a context variable does not
    cross into a pool's threads by itself)."""

    def submit(pool: ThreadPoolExecutor, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        caller = CALLER.get()
        if caller is None:
            return original_submit(pool, fn, *args, **kwargs)

        def as_caller(*a: Any, **kw: Any) -> Any:
            token = CALLER.set(caller)
            try:
                return fn(*a, **kw)
            finally:
                CALLER.reset(token)

        return original_submit(pool, as_caller, *args, **kwargs)

    return submit


def _as_state_machine(original_client_for: Any, enforcer: IamEnforcer) -> Any:
    """A Step Functions task module's ``boto_client_for`` whose clients call as the state machine's role."""

    def client_for(*args: Any, **kwargs: Any) -> Any:
        client = original_client_for(*args, **kwargs)
        return _StateMachineClient(client, enforcer.state_machine) if enforcer.state_machine else client

    return client_for


def merge_reports(sections: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``iam`` sections of shard reports as one: counts add, a grant is unused only if unused in every shard."""
    merged: dict[str, Any] = {}
    for name in dict.fromkeys(n for section in sections for n in section):
        entries = [s[name] for s in sections if name in s]
        denied: Counter[tuple[str, str]] = Counter()
        unmapped: Counter[str] = Counter()
        for e in entries:
            denied.update({(d["action"], d["resource"]): d["count"] for d in e["denied"]["first"]})
            unmapped.update(e["unmapped"]["operations"])
        unused: dict[str, set[str]] | None = None
        for e in entries:
            mine = {g["action"]: set(g["resources"]) for g in e["granted_unused"]}
            unused = (
                mine if unused is None else {a: rs & mine[a] for a, rs in unused.items() if rs & mine.get(a, set())}
            )
        merged[name] = {
            **entries[0],
            "calls": sum(e["calls"] for e in entries),
            "platform_calls": sum(e["platform_calls"] for e in entries),
            "denied": {
                "count": sum(e["denied"]["count"] for e in entries),
                "first": [{"action": a, "resource": r, "count": n} for (a, r), n in denied.most_common(MAX_EXAMPLES)],
            },
            "unmapped": {"count": sum(e["unmapped"]["count"] for e in entries), "operations": dict(unmapped)},
            "granted_unused": [{"action": a, "resources": sorted(rs)} for a, rs in sorted((unused or {}).items())],
        }
    return merged
