"""The saga's forward path: each step, then the next; a failure goes to the compensations (the first
step's ``refused_input_errors`` fail at once, its ``compensate_all_on`` undo everything; ``park_on`` parks; any
step's ``already_parked_on`` fails at once; anything else compensates, or parks with ``park_unknown_errors``)."""

from __future__ import annotations

from aws_cdk import aws_stepfunctions as sfn

from constructs_lib.saga.compensation import CompensateFrom
from constructs_lib.saga.park import SagaStates
from constructs_lib.saga.tasks import STATES_ALL, TaskState, apply_retries


def build_forward(states: SagaStates, compensate_from: CompensateFrom, completed: TaskState | None) -> TaskState:
    """Build the forward steps (the last one followed by ``completed``, if any, or ending the execution
    when ``completed`` is a fallback: then only its ``fallback_on`` errors lead to it); return the first."""
    props = states.props
    steps = list(props.steps)
    forward: list[TaskState] = []
    for i, step in enumerate(steps):
        task = step.forward.build(states.scope, step.name, result_path=step.result_path or f"$.{step.name}")
        states.states[step.name] = task
        retry_on = step.forward.retry_on if step.forward.retry_on is not None else props.retry_on
        outage = (props.outage_retry, props.outage_errors) if props.outage_retry is not None else None
        apply_retries(task, step.retry or props.forward_retry, retry_on, props.throttle_retry, outage)
        states.catch_already_parked(task, props.error_path)
        if i == 0 and props.refused_input_errors:
            refused = sfn.Fail(
                states.scope, props.refused_state_name, error=props.refused_state_name, cause=props.refused_cause
            )
            states.states[props.refused_state_name] = refused
            task.add_catch(refused, errors=list(props.refused_input_errors), result_path=props.error_path)
        if i == 0 and props.compensate_all_on:
            task.add_catch(
                compensate_from(len(steps) - 1), errors=list(props.compensate_all_on), result_path=props.error_path
            )
        if step.skip_compensation_on:
            task.add_catch(compensate_from(i - 1), errors=list(step.skip_compensation_on), result_path=props.error_path)
        if step.compensate_on:
            task.add_catch(compensate_from(i), errors=list(step.compensate_on), result_path=props.error_path)
        fallback = props.completed.fallback_on if props.completed is not None else ()
        if i == len(steps) - 1 and fallback and completed is not None:  # the step recorded it, or says it could not
            task.add_catch(completed, errors=list(fallback), result_path=props.error_path)
        if props.park_on:  # still failing after its retries, yet nothing is wrong with the item: park it, undo nothing
            task.add_catch(states.park_target(), errors=list(props.park_on), result_path=props.compensation_error_path)
        if props.park_unknown_errors:  # no business decision: a person decides, nothing undone
            task.add_catch(states.park_target(), errors=[STATES_ALL], result_path=props.compensation_error_path)
        else:
            task.add_catch(compensate_from(i), errors=[STATES_ALL], result_path=props.error_path)
        if forward:
            forward[-1].next(task)
        forward.append(task)
    if completed is not None and not (props.completed is not None and props.completed.fallback_on):
        forward[-1].next(completed)
    return forward[0]
