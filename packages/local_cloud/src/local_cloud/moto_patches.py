"""Make moto behave like the real services where our guarantees depend on it.

Why hand-written: real DynamoDB applies a conditional write atomically per item. moto evaluates
the condition and then stores the item as two Python steps, so two threads can both pass the
same condition. Every guarantee we test under concurrency (one side effect from 16 concurrent
deliveries) rests on that atomicity, so we serialise moto's DynamoDB writes and reads with one lock.
"""

from __future__ import annotations

import functools
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

_lock = threading.RLock()
_METHODS = ("put_item", "update_item", "delete_item", "transact_write_items", "get_item", "transact_get_items")


def _serialised(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with _lock:
            return method(*args, **kwargs)

    return wrapper


@contextmanager
def dynamodb_lock() -> Iterator[None]:
    """Hold the lock :func:`atomic_dynamodb` serialises moto's DynamoDB item operations with."""
    with _lock:
        yield


@contextmanager
def atomic_dynamodb() -> Iterator[None]:
    """Within this context moto's DynamoDB item operations run one at a time."""
    from moto.dynamodb.models import DynamoDBBackend

    with ExitStack() as stack:
        for name in _METHODS:
            original = getattr(DynamoDBBackend, name)
            stack.enter_context(mock.patch.object(DynamoDBBackend, name, _serialised(original)))
        yield


#: moto's Step Functions task modules that call AWS through a module-level ``boto_client_for``
#: (Lambda tasks, and the direct service integrations a saga may use). Patched together here and
#: by local_cloud/iam_enforce.py, so every task's AWS call gets the same client and IAM check.
_TASK = "moto.stepfunctions.parser.asl.component.state.exec.state_task"
STEP_FUNCTIONS_CLIENT_MODULES = (
    f"{_TASK}.lambda_eval_utils",
    f"{_TASK}.service.state_task_service_dynamodb",
    f"{_TASK}.service.state_task_service_sqs",
    f"{_TASK}.service.state_task_service_sns",
    f"{_TASK}.service.state_task_service_events",
    f"{_TASK}.service.state_task_service_aws_sdk",
)


def step_functions_client_modules() -> list[types.ModuleType]:
    """The modules of :data:`STEP_FUNCTIONS_CLIENT_MODULES`, imported (each binds ``boto_client_for``)."""
    import importlib

    modules = [importlib.import_module(name) for name in STEP_FUNCTIONS_CLIENT_MODULES]
    for module in modules:
        if not callable(getattr(module, "boto_client_for", None)):
            raise RuntimeError(f"{module.__name__} no longer binds boto_client_for: revisit local_cloud.moto_patches")
    return modules


#: Errors ``States.ALL`` does not match on AWS: "The States.ALL error type ... can't catch the
#: States.DataLimitExceeded terminal error and Runtime error types"
#: (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html, States.ALL).
UNCATCHABLE_BY_STATES_ALL = ("States.Runtime", "States.DataLimitExceeded")


@contextmanager
def states_all_excludes_terminal_errors() -> Iterator[None]:
    """moto's ``States.ALL`` matches every error name, States.Runtime and States.DataLimitExceeded
    included, so a Retry or Catch on ``States.ALL`` handled what fails the execution on AWS. The
    wildcard no longer matches those two (a retrier or catcher naming them explicitly is unchanged)."""
    from moto.stepfunctions.parser.asl.component.common.error_name.error_equals_decl import ErrorEqualsDecl

    original = ErrorEqualsDecl._eval_body

    @functools.wraps(original)
    def eval_body(self: Any, env: Any) -> None:
        error_name = env.stack[-1]
        name = getattr(error_name, "error_name", None)
        if name in UNCATCHABLE_BY_STATES_ALL and ErrorEqualsDecl._STATE_ALL_ERROR in self.error_names:
            env.stack.pop()
            env.stack.append(any(getattr(n, "error_name", None) == name for n in self.error_names))
            return
        original(self, env)

    with mock.patch.object(ErrorEqualsDecl, "_eval_body", eval_body):
        yield


@contextmanager
def dynamodb_task_timeout() -> Iterator[None]:
    """moto's DynamoDB task reports every exception that is not a ClientError as
    ``DynamoDB.AmazonDynamoDBException``, its own timeout included; on AWS a task that runs past its
    ``TimeoutSeconds`` fails with ``States.Timeout``
    (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html, States.Timeout),
    which the saga's status writes handle differently (a retrier or catcher may name it)."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_dynamodb import (
        StateTaskServiceDynamoDB,
    )

    original = StateTaskServiceDynamoDB._from_error

    @functools.wraps(original)
    def from_error(self: Any, env: Any, ex: Exception) -> Any:
        if isinstance(ex, TimeoutError):
            return self._get_timed_out_failure_event(env)
        return original(self, env, ex)

    with mock.patch.object(StateTaskServiceDynamoDB, "_from_error", from_error):
        yield


@contextmanager
def sfn_execution_running_from_start() -> Iterator[None]:
    """moto's StartExecution appends the new execution to its state machine and only then sets its
    status (``Execution.start``): a ListExecutions on another thread in between read ``None.value`` and
    raised, which killed a chaos shard under load (the alarm evaluator lists executions every simulated
    minute). On AWS StartExecution returns a RUNNING execution (API_StartExecution.html), so it is
    RUNNING from the moment it exists; ``start`` sets the same status again."""
    from moto.stepfunctions.parser.api import ExecutionStatus
    from moto.stepfunctions.parser.backend.execution import Execution

    original = Execution.__init__

    @functools.wraps(original)
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.exec_status = ExecutionStatus.RUNNING

    with mock.patch.object(Execution, "__init__", init):
        yield


#: Wall seconds between two readings of the simulated clock while a task's timeout is waited for (the
#: task's own end wakes the wait at once).
TASK_TIMEOUT_POLL_SECONDS = 0.05


@contextmanager
def sfn_task_timeout_on_clock(clock: Any) -> Iterator[None]:
    """moto times a Task state's ``TimeoutSeconds`` with the wall clock (``_evaluate_with_timeout`` waits
    on a ``threading.Event`` for that many wall seconds), while everything else in the local run takes
    simulated time. On a loaded machine a DynamoDB write that takes milliseconds on AWS ran past the
    MarkCompleted task's 10 s and failed with States.Timeout, and its thread still wrote afterwards. The
    wait now counts ``clock``'s seconds (the process's work time, decision 0025), as AWS counts a task's
    own time (https://docs.aws.amazon.com/step-functions/latest/dg/state-task.html, TimeoutSeconds)."""
    from moto.stepfunctions.parser.asl.component.state.exec import execute_state

    class SimulatedTimeEvent(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            if timeout is None:
                return super().wait()
            deadline = clock.now() + timeout
            while not self.is_set():
                left = deadline - clock.now()
                if left <= 0:
                    return False
                super().wait(min(left, TASK_TIMEOUT_POLL_SECONDS))
            return True

    shim = types.SimpleNamespace(Event=SimulatedTimeEvent)
    with mock.patch.object(execute_state, "threading", shim):
        yield
