"""The saga's compensations: the chain that undoes steps 0..i in reverse, and the park chain, the
``<undo>ThenPark`` copies that still run the earlier compensations after a later one failed."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from aws_cdk import aws_stepfunctions as sfn

from constructs_lib.saga.park import SagaStates
from constructs_lib.saga.props import SagaStep
from constructs_lib.saga.tasks import STATES_ALL, TaskState

#: ``compensate_from(i)``: the first state to run when steps 0..i must be undone.
CompensateFrom = Callable[[int], sfn.IChainable]


def build_compensations(states: SagaStates, compensated: TaskState | None) -> CompensateFrom:
    """Build the park chain, then the compensation chain (ending in ``compensated``, the recorder, or
    the compensated end); return where undoing steps 0..i starts."""
    steps = list(states.props.steps)
    park_from = _build_park_chain(states, steps)
    return _build_compensation_chain(states, steps, compensated, park_from)


def _build_park_chain(states: SagaStates, steps: Sequence[SagaStep]) -> CompensateFrom:
    """The park chain: copies of compensations 0..k-1 that run after compensation k failed (a copy
    only where a later compensation's failure leads to it, not one that parks at once)."""

    def reached_from_later(i: int) -> bool:
        return any(s.compensation is not None and not s.park_when_compensation_fails for s in steps[i + 1 :])

    park_chain: dict[int, TaskState] = {}
    for i, step in enumerate(steps):
        if step.compensation is not None and reached_from_later(i):
            park_chain[i] = states.compensation_task(step, f"{step.undo_name}ThenPark")

    def park_from(i: int) -> sfn.IChainable:
        """Where to go after compensation ``i`` failed: the next earlier ThenPark copy, or park."""
        earlier = [j for j in park_chain if j < i]
        return park_chain[max(earlier)] if earlier else states.park_target()

    for i, task in park_chain.items():
        step = steps[i]
        result = step.compensation_result_path or f"$.{step.undo_name}"
        if step.park_at_once_on:  # the error is already recorded: keep it, park at once
            task.add_catch(states.park_target(), errors=list(step.park_at_once_on), result_path=f"{result}_error")
        failed_to = states.park_target() if step.park_when_compensation_fails else park_from(i)
        task.add_catch(failed_to, errors=[STATES_ALL], result_path=f"{result}_error")
        task.next(park_from(i))
    return park_from


def _build_compensation_chain(
    states: SagaStates, steps: Sequence[SagaStep], compensated: TaskState | None, park_from: CompensateFrom
) -> CompensateFrom:
    """The compensation chain: each compensation, then the one before it; failing -> the park chain.
    With a fallback ``compensated`` recorder the last one (its ``final_compensation`` task) ends the
    execution, and only its ``fallback_on`` errors lead to the recorder."""
    props = states.props
    fallback = props.compensated.fallback_on if props.compensated is not None else ()
    compensating = [i for i, step in enumerate(steps) if step.compensation is not None]
    chain: dict[int, TaskState] = {}
    for i in compensating:
        step = steps[i]
        if fallback and i == compensating[0]:  # the last to run: it records the outcome itself
            chain[i] = states.compensation_task(step, step.undo_name, task=step.final_compensation, no_retry=fallback)
        else:
            chain[i] = states.compensation_task(step, step.undo_name)

    def compensate_from(i: int) -> sfn.IChainable:
        """The first compensation to run when steps 0..i must be undone."""
        candidates = [j for j in chain if j <= i]
        if candidates:
            return chain[max(candidates)]
        return compensated or states.compensated()

    for i, task in chain.items():
        if steps[i].park_at_once_on:
            task.add_catch(
                states.park_target(), errors=list(steps[i].park_at_once_on), result_path=props.compensation_error_path
            )
        last = not any(j < i for j in chain)
        if last and fallback and compensated is not None:  # it recorded the outcome, or says it could not
            task.add_catch(compensated, errors=list(fallback), result_path=props.compensation_error_path)
        failed_to = states.park_target() if steps[i].park_when_compensation_fails else park_from(i)
        task.add_catch(failed_to, errors=[STATES_ALL], result_path=props.compensation_error_path)
        after = compensate_from(i - 1) if not last else (None if fallback else compensated)
        if after is not None:
            task.next(after)
    return compensate_from
