"""The fault matrix's injection into the emulator, keyed by the order ID in each state's input.

Why hand-written: moto has no fault injection, and AWS's own (Fault Injection Service) has no
Step Functions task faults. Three places, none in product code:

- Step Functions task level: ``ExecutionState._evaluate_with_timeout`` (one call per attempt of a
  Task state) fails the attempt with the Step Functions error the cell names, before the task runs
  or after it ran (its effect happened, the answer was lost); stops the execution there
  (StopExecution, as an operator would) or times it out (``env.set_timed_out``, what moto's
  program does when ``TimeoutSeconds`` passes).
- The crash between a side effect and its completion marker: Powertools' ``save_success``.
- A step's own outcome write (decision 0024: the orders table's UpdateItem to COMPLETED / COMPENSATED
  from a step function): botocore's ``BaseClient._make_api_call``, failed with a DynamoDB error code
  before DynamoDB applies it, or the function dies there.
- The provider transport: urllib3's ``HTTPConnectionPool._make_request`` (the HTTPS adapters'
  connection pool): the request reaches the sandbox, the provider acts, and the answer is lost
  (read timeout, connection reset).
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any
from unittest import mock
from urllib.parse import unquote, urlsplit

from harness.faults.cells import Rule
from local_cloud.errors import service_error
from local_cloud.faults import FaultCounter
from local_cloud.lambda_runtime import SimulatedCrash
from local_cloud.template import ACCOUNT, REGION

_PROVIDER_ROUTES = (
    ("POST", "/payment/charges", "charge"),
    ("POST", "/payment/refunds", "refund"),
    ("POST", "/carrier/shipments", "ship"),
)


@dataclass
class FaultPlan:
    """Each order's rules, how often each has been consulted, and where each order's execution is."""

    rules: dict[str, list[Rule]] = field(default_factory=dict)
    counter: FaultCounter = field(default_factory=FaultCounter)
    _seen: dict[tuple[str, int], int] = field(default_factory=dict)
    _first_execution: dict[str, str] = field(default_factory=dict)
    _current: dict[str, tuple[str, str]] = field(default_factory=dict)  # order -> (state, execution)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    #: The concurrent actors (harness.matrix.actors.Actors: ``race(plan, rule, order_id)`` and
    #: ``hooks(plan)``), for ``race``, ``duplicate`` and ``inflight`` rules.
    actors: Any = None

    def add(self, order_id: str, rules: list[Rule]) -> None:
        self.rules[order_id] = list(rules)

    def applies(self, order_id: str | None) -> bool:
        """Whether any rule is planned for ``order_id``."""
        return order_id is not None and order_id in self.rules

    def enter(self, order_id: str, state: str, execution: str) -> None:
        with self._lock:
            self._first_execution.setdefault(order_id, execution)
            self._current[order_id] = (state, execution)

    def current_state(self, order_id: str) -> str | None:
        with self._lock:
            return self._current.get(order_id, ("", ""))[0] or None

    def fire(self, order_id: str, state: str | None, kinds: tuple[str, ...], action: str = "") -> Rule | None:
        """The first rule of one of ``kinds`` at ``state`` (and ``action``) that fires on this attempt."""
        rules = self.rules.get(order_id)
        if not rules or state is None:
            return None
        with self._lock:
            execution = self._current.get(order_id, ("", ""))[1]
            first = execution == self._first_execution.get(order_id)
            for index, rule in enumerate(rules):
                if rule.state != state or rule.kind not in kinds or (action and rule.action != action):
                    continue
                if rule.first_execution_only and not first:
                    continue
                key = (order_id, index)
                self._seen[key] = self._seen.get(key, 0) + 1
                if rule.fails(self._seen[key]):
                    self.counter.add(f"{rule.kind}:{rule.error or rule.kind}")
                    return rule
        return None


def find_order_id(value: Any, depth: int = 0) -> str | None:
    """The ``order_id`` in a state input, an event or an idempotency payload (nested up to 3 levels)."""
    if isinstance(value, Mapping):
        found = value.get("order_id")
        if isinstance(found, str):
            return found
        if depth < 3:
            for item in value.values():
                if isinstance(item, (Mapping, list)) and (inner := find_order_id(item, depth + 1)):
                    return inner
    elif isinstance(value, list) and depth < 3:
        for item in value:
            if inner := find_order_id(item, depth + 1):
                return inner
    return None


class InjectedFailure(Exception):
    """A task attempt the fault matrix fails with the Step Functions error ``error``."""

    def __init__(self, error: str) -> None:
        super().__init__(f"injected by the fault matrix: {error}")
        self.error = error


def failure_event(state: Any, env: Any, error: str) -> Any:
    """The failure event Step Functions records for ``error`` at ``state`` (a timeout as TaskTimedOut)."""
    from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
    from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import CustomErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import FailureEvent
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
        StatesErrorNameType,
    )
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    if error == "States.Timeout" and hasattr(state, "_get_timed_out_failure_event"):
        return state._get_timed_out_failure_event(env)
    states_names = {
        "States.Runtime": StatesErrorNameType.StatesRuntime,
        "States.Timeout": StatesErrorNameType.StatesTimeout,
    }
    name = StatesErrorName(typ=states_names[error]) if error in states_names else CustomErrorName(error)
    details = TaskFailedEventDetails(error=error, cause="injected by the fault matrix")
    event_details: Any = EventDetails(taskFailedEventDetails=details)  # type: ignore[typeddict-item]
    return FailureEvent(env=env, error_name=name, event_type=HistoryEventType.TaskFailed, event_details=event_details)


def _execution_state_classes() -> list[type]:
    """ExecutionState and every subclass that defines its own ``_from_error``."""
    from moto.stepfunctions.parser.asl.component.state.exec.execute_state import ExecutionState
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service_factory

    _ = state_task_service_factory  # imports every service task class
    out: list[type] = []
    todo: list[type] = [ExecutionState]
    while todo:
        cls = todo.pop()
        if "_from_error" in cls.__dict__:
            out.append(cls)
        todo.extend(cls.__subclasses__())
    return out


def _context(env: Any) -> dict[str, Any]:
    try:
        return dict(env.states.context_object.context_object_data.get("Execution") or {})
    except AttributeError:
        return {}


def stop_execution(execution_arn: str) -> None:
    """StopExecution as an operator's call would (moto's backend, so no IAM caller is needed)."""
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends

    stepfunctions_parser_backends[ACCOUNT][REGION].stop_execution(execution_arn)


@contextmanager
def inject_plan(plan: FaultPlan) -> Iterator[FaultPlan]:
    """While active, the plan's rules fire in the emulator (see the module docstring)."""
    import urllib3
    from aws_lambda_powertools.utilities.idempotency.persistence.base import BasePersistenceLayer
    from botocore.client import BaseClient
    from moto.stepfunctions.parser.asl.component.state.exec.execute_state import ExecutionState

    evaluate = _step_hook(plan, ExecutionState._evaluate_with_timeout)
    save_success = _crash_hook(plan, BasePersistenceLayer.save_success)
    api_call = _outcome_write_hook(plan, BaseClient._make_api_call)
    pool_class = urllib3.connectionpool.HTTPConnectionPool
    make_request = _ambiguous_hook(plan, pool_class._make_request)
    with ExitStack() as stack:
        for cls in _execution_state_classes():
            stack.enter_context(mock.patch.object(cls, "_from_error", _from_error(cls.__dict__["_from_error"])))
        stack.enter_context(mock.patch.object(ExecutionState, "_evaluate_with_timeout", evaluate))
        stack.enter_context(mock.patch.object(BasePersistenceLayer, "save_success", save_success))
        stack.enter_context(mock.patch.object(pool_class, "_make_request", make_request))
        stack.enter_context(mock.patch.object(BaseClient, "_make_api_call", api_call))
        if plan.actors is not None:
            stack.enter_context(plan.actors.hooks(plan))
        yield plan


def _step_hook(plan: FaultPlan, original_eval: Any) -> Any:
    """Step Functions' Task state evaluation with the plan's races, errors, stops and timeouts."""

    @functools.wraps(original_eval)
    def evaluate(self: Any, env: Any) -> None:
        state_input = env.states.get_input()
        order_id = find_order_id(state_input) if isinstance(state_input, Mapping) else None
        if not plan.applies(order_id):
            return original_eval(self, env)
        assert order_id is not None
        execution = _context(env)
        plan.enter(order_id, self.name, str(execution.get("Name", "")))
        race = plan.fire(order_id, self.name, ("race",)) if plan.actors is not None else None
        if race is not None and race.timing == "before":
            plan.actors.race(plan, race, order_id)
        rule = plan.fire(order_id, self.name, ("error",))
        if rule is not None and rule.timing == "before":
            raise InjectedFailure(rule.error)
        original_eval(self, env)
        if race is not None and race.timing == "after":
            plan.actors.race(plan, race, order_id)
        if rule is not None:  # after acting: the effect happened, the answer is lost
            raise InjectedFailure(rule.error)
        if plan.fire(order_id, self.name, ("stop",)):
            stop_execution(str(execution.get("Id", "")))
        elif plan.fire(order_id, self.name, ("timeout",)):
            env.set_timed_out()
        return None

    return evaluate


def _crash_hook(plan: FaultPlan, original_save: Any) -> Any:
    """Powertools' completion marker: a ``crash`` rule kills the function after the side effect, before it."""

    @functools.wraps(original_save)
    def save_success(self: Any, data: Any, result: Any) -> Any:
        order_id = find_order_id(data)
        if plan.applies(order_id) and plan.fire(str(order_id), plan.current_state(str(order_id)), ("crash",)):
            raise SimulatedCrash("killed after the side effect, before the completion marker (fault matrix)")
        return original_save(self, data, result)

    return save_success


def _outcome_write_hook(plan: FaultPlan, original_call: Any) -> Any:
    """botocore's API call: an ``outcome_write`` rule fails (or crashes) the step's own outcome write."""

    @functools.wraps(original_call)
    def api_call(self: Any, operation: str, params: Any) -> Any:
        order_id = outcome_write(operation, params)
        if order_id is not None and plan.applies(order_id):
            rule = plan.fire(order_id, plan.current_state(order_id), ("outcome_write",))
            if rule is not None and rule.error == "crash":
                raise SimulatedCrash("killed between the step's effect and its outcome write (fault matrix)")
            if rule is not None:
                raise service_error(self, operation, rule.error, "injected by the fault matrix", 400)
        return original_call(self, operation, params)

    return api_call


def _ambiguous_hook(plan: FaultPlan, original_request: Any) -> Any:
    """urllib3's request to a provider: an ``ambiguous`` rule loses the answer after the provider acted."""
    import urllib3

    @functools.wraps(original_request)
    def make_request(self: Any, conn: Any, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        action, order_id = provider_call(method, url, kwargs.get("body", args[0] if args else None))
        rule = None
        if action and order_id and plan.applies(order_id):
            rule = plan.fire(order_id, plan.current_state(order_id), ("ambiguous",), action=action)
        response = original_request(self, conn, method, url, *args, **kwargs)
        if rule is None:
            return response
        # The provider acted; its answer never arrives.
        if rule.error == "read_timeout":
            raise urllib3.exceptions.ReadTimeoutError(self, url, "Read timed out. (injected after the provider acted)")
        raise urllib3.exceptions.ProtocolError(
            "Connection aborted.", ConnectionResetError(104, "Connection reset by peer (injected after acting)")
        )

    return make_request


def _from_error(original: Any) -> Any:
    """A Task state's error mapping that reports an injected failure as named."""

    @functools.wraps(original)
    def wrapped(self: Any, env: Any, ex: Exception) -> Any:
        # Each integration maps exceptions its own way (moto's DynamoDB task turns anything but a
        # ClientError into DynamoDB.AmazonDynamoDBException); an injected one is reported as named.
        if isinstance(ex, InjectedFailure):
            return failure_event(self, env, ex.error)
        return original(self, env, ex)

    return wrapped


#: The outcomes a step writes itself (decision 0024).
_OUTCOMES = frozenset({"COMPLETED", "COMPENSATED"})


def outcome_write(operation: str, params: Any) -> str | None:
    """The order ID of an UpdateItem moving an order to an outcome (None for any other call)."""
    if operation != "UpdateItem" or not isinstance(params, Mapping):
        return None
    values = params.get("ExpressionAttributeValues") or {}
    to = (values.get(":to") or {}).get("S") if isinstance(values, Mapping) else None
    if to not in _OUTCOMES:
        return None
    order_id = ((params.get("Key") or {}).get("order_id") or {}).get("S")
    return order_id if isinstance(order_id, str) else None


def provider_call(method: str, url: str, body: Any) -> tuple[str | None, str | None]:
    """(action, order ID) of a state-changing provider request (None for lookups and anything else)."""
    path = urlsplit(url).path
    if method == "POST" and path.startswith("/carrier/shipments/") and path.endswith("/cancel"):
        key = unquote(path[len("/carrier/shipments/") : -len("/cancel")])
        return "cancel", key.split("#", 1)[0]
    for verb, route, action in _PROVIDER_ROUTES:
        if method == verb and path == route:
            try:
                payload = json.loads(body) if isinstance(body, (bytes, str)) else {}
            except ValueError:
                return action, None
            return action, payload.get("order_id") if isinstance(payload, dict) else None
    return None, None
