"""Step Functions executions let simulated time pass each for itself.

moto runs each execution on its own threads: the program's (where a ``Retry`` waits) and one per task
state (where a Lambda task's invocation runs: a crashed invocation's timeout, botocore's retry backoff
inside the function). Those threads act for their execution (:func:`local_cloud.clock.acting_for`), so
their :meth:`~local_cloud.clock.SimClock.sleep` waits for the execution's own target instead of advancing
the one clock every execution shares; the runner steps the clock when every running execution waits
(:func:`running_executions`, :meth:`~local_cloud.clock.SimClock.earliest_wait`), and an execution's end
wakes it (:meth:`~local_cloud.clock.SimClock.notify_waits`).

Not covered (their waits advance the clock, as before): a Step Functions SDK integration's own botocore
backoff (no Lambda task around it), and an Express execution started with ``StartSyncExecution`` (it runs
on the caller's thread). A Map or Parallel branch acts for its execution: one waiting branch counts the
execution as waiting (this project's state machines have neither).
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

from local_cloud import moto_state
from local_cloud.clock import SimClock, acting_execution, acting_for
from local_cloud.template import ACCOUNT, REGION


def _execution_arn(env: Any) -> str:
    """The running execution's ARN from moto's context object (``$$.Execution.Id``)."""
    return str(env.states.context_object.context_object_data["Execution"]["Id"])


@contextmanager
def execution_waits(clock: SimClock) -> Iterator[None]:
    """A Retry's wait and a Lambda task's invocation act for their execution; an execution's end wakes the
    runner. Patches ``RetrierDecl._eval_body`` (the Retry wait runs within it, on the program's thread),
    ``lambda_eval_utils.execute_lambda_function_integration`` (both Lambda task kinds, on the task's thread)
    and ``ExecutionWorker._execution_logic`` (an execution's whole life, on its own thread)."""
    from moto.stepfunctions.parser.asl.component.common.retry.retrier_decl import RetrierDecl
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils
    from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker

    original_retry = RetrierDecl._eval_body
    original_invoke = lambda_eval_utils.execute_lambda_function_integration
    original_logic = ExecutionWorker._execution_logic

    def retry_body(self: Any, env: Any) -> None:
        with acting_for(_execution_arn(env)):
            original_retry(self, env)

    def invoke(env: Any, *args: Any, **kwargs: Any) -> Any:
        with acting_for(_execution_arn(env)):
            return original_invoke(env, *args, **kwargs)

    def execution_logic(self: Any) -> None:
        try:
            original_logic(self)
        finally:  # its status is final now: the runner may find every remaining execution waiting
            clock.notify_waits()

    with ExitStack() as stack:
        stack.enter_context(mock.patch.object(RetrierDecl, "_eval_body", retry_body))
        stack.enter_context(mock.patch.object(lambda_eval_utils, "execute_lambda_function_integration", invoke))
        stack.enter_context(mock.patch.object(ExecutionWorker, "_execution_logic", execution_logic))
        yield


@contextmanager
def http_retry_waits(clock: SimClock) -> Iterator[None]:
    """urllib3's retry backoff (the provider clients' ``Retry``, ``lambda_resilience``'s HTTP calls) on an
    execution's thread is that execution's wait on the simulated clock, like botocore's; on any other
    thread it stays a wall-clock sleep (work time), as before. Patches ``urllib3.util.retry``'s ``time``
    (``Retry._sleep_backoff`` and ``sleep_for_retry`` call ``time.sleep``; there is no public hook)."""
    import time

    from urllib3.util import retry

    def sleep(seconds: float) -> None:
        if acting_execution() is None:
            time.sleep(seconds)
        else:
            clock.sleep(seconds)

    shim = types.SimpleNamespace(sleep=sleep, time=time.time, monotonic=time.monotonic)
    with mock.patch.object(retry, "time", shim):
        yield


def running_executions() -> list[str]:
    """The ARNs of the executions RUNNING in this process's moto (none when moto runs elsewhere: then no
    execution waits here either). Read from the backend (:mod:`local_cloud.moto_state`): the runner asks at
    every step."""
    return moto_state.running_executions(ACCOUNT, REGION)
