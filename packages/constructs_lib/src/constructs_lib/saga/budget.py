"""The saga's execution timeout: the longest path with every attempt of every task timing out."""

from __future__ import annotations

from constructs_lib.saga.props import SagaProps
from constructs_lib.saga.tasks import THROTTLE_ERRORS, RetryPolicy, SagaTask


def _task_worst(policy: RetryPolicy, task: SagaTask, where: str, latency: float) -> float:
    """One task at its worst: every attempt a failed Init (Lambda), its timeout and the state latency."""
    return policy.worst_case_seconds(task.attempt_seconds(where), task.init_seconds() + latency)


def _throttle_worst(props: SagaProps, task: SagaTask, latency: float) -> float:
    """A forward task's throttle retrier at its worst: every delay at its ceiling, each refused attempt the
    state latency only (Lambda refused it: nothing ran). Zero without the retrier or a throttle to retry."""
    retry_on = task.retry_on if task.retry_on is not None else props.retry_on
    if props.throttle_retry is None or not any(e in THROTTLE_ERRORS for e in retry_on):
        return 0.0
    return props.throttle_retry.worst_case_seconds(0.0, latency)


def _outage_worst(props: SagaProps, task: SagaTask, where: str, latency: float) -> float:
    """A forward task's outage retrier at its worst: every attempt a whole invocation (it ran, and failed or
    timed out). Zero without the retrier or one of its errors to retry."""
    retry_on = task.retry_on if task.retry_on is not None else props.retry_on
    if props.outage_retry is None or not set(props.outage_errors) & set(retry_on):
        return 0.0
    return props.outage_retry.worst_case_seconds(task.attempt_seconds(where), task.init_seconds() + latency) - (
        task.attempt_seconds(where) + task.init_seconds() + latency
    )  # its first attempt is the step's own, counted once above


def budget_seconds(props: SagaProps) -> float:
    """The execution timeout: the longest path with every attempt of every task timing out.

    Each attempt counts its timeout, a failed Lambda Init phase (:data:`LAMBDA_INIT_SECONDS`, Lambda
    tasks only) and ``state_latency``. The path: every forward step (its retry policy exhausted),
    every compensation once (each runs either in the compensation chain or in the park chain, never
    both), the slower of the completed / compensated recorders (it may fail and park), the parked
    recorder, the last resort, plus the margin. An upper bound: no path runs every one of these.
    """
    latency = props.state_latency.to_seconds()
    total = 0.0
    for step in props.steps:
        total += _task_worst(step.retry or props.forward_retry, step.forward, step.name, latency)
        total += _throttle_worst(props, step.forward, latency)
        total += _outage_worst(props, step.forward, step.name, latency)
        if step.compensation is not None:
            policy = step.compensation_retry or props.compensation_retry
            total += _task_worst(policy, step.compensation, step.undo_name, latency)
    outcome = [r for r in (props.completed, props.compensated) if r is not None]
    total += max((_task_worst(props.forward_retry, r.task, r.name, latency) for r in outcome), default=0.0)
    for recorder in (props.parked, props.last_resort):
        if recorder is not None:
            total += _task_worst(props.forward_retry, recorder.task, recorder.name, latency)
    return total + props.timeout_margin.to_seconds()
