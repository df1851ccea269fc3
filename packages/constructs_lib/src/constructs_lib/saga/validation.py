"""The saga's props checked once, at synth: combinations that would build a saga that cannot keep its
promise are refused with a :class:`ValueError` naming the step or recorder."""

from __future__ import annotations

from constructs_lib.saga.props import SagaProps, SagaRecorder, SagaStep
from constructs_lib.saga.tasks import STATES_ALL, THROTTLE_ERRORS


def _check_path(where: str, path: str) -> None:
    if not path.startswith("$."):
        raise ValueError(f"{where}: {path!r} must start with '$.' (a path of '$' would replace the saga's state)")


def validate(props: SagaProps) -> None:
    """Refuse prop combinations that would build a saga that cannot keep its promise (synth time)."""
    if not props.steps:
        raise ValueError("Saga needs at least one step")
    compensations = [s for s in props.steps if s.compensation is not None]
    last_compensated = props.steps.index(compensations[-1]) if compensations else -1
    names: list[str] = []
    for index, step in enumerate(props.steps):
        names += _checked_step(props, step, then_park=index < last_compensated)
    _check_special_errors(props)
    if props.compensate_all_on and not compensations:
        raise ValueError("compensate_all_on needs at least one step with a compensation")
    if props.parked is not None and not compensations:
        raise ValueError("parked: no step has a compensation, so nothing can park")
    _check_park(props)
    if props.last_resort is not None and props.parked is None:
        raise ValueError("last_resort: it runs when the parked recorder fails, and there is none")
    for recorder in (props.completed, props.compensated, props.parked, props.last_resort):
        if recorder is not None:
            names.append(_checked_recorder(recorder))
    _check_fallbacks(props)
    _check_already_parked(props)
    _check_outage(props)
    names += [props.park_error, props.refused_state_name, props.compensated_state_name]
    if props.already_parked_on:
        names.append(props.already_parked_state_name)
    names.append(props.already_recorded_state_name)
    _check_path("error_path", props.error_path)
    _check_path("compensation_error_path", props.compensation_error_path)
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"state names must be unique; repeated: {duplicates}")


def _check_park(props: SagaProps) -> None:
    """``park_on`` and ``park_unknown_errors``: only with a ``parked`` recorder to announce the item."""
    if props.park_on and props.parked is None:
        raise ValueError("park_on needs a parked recorder (the parked item must be announced)")
    if STATES_ALL in props.park_on:
        raise ValueError("park_on cannot be States.ALL (a business error would park instead of compensating)")
    if props.park_unknown_errors and props.parked is None:
        raise ValueError("park_unknown_errors needs a parked recorder (the parked item must be announced)")


def _checked_step(props: SagaProps, step: SagaStep, *, then_park: bool) -> list[str]:
    """Check one step; its state names (``then_park``: it also has a ``<undo>ThenPark`` copy)."""
    where = f"step {step.name!r}"
    names = [step.name]
    _check_path(where, step.result_path or f"$.{step.name}")
    if step.compensation is not None:
        names.append(step.undo_name)
        _check_path(where, step.compensation_result_path or f"$.{step.undo_name}")
        if then_park:
            names.append(f"{step.undo_name}ThenPark")
    elif step.compensation_name or step.compensation_result_path or step.compensation_retry:
        raise ValueError(f"{where}: compensation_name/result_path/retry given without a compensation")
    _check_step_errors(props, step, where)
    retry_on = step.forward.retry_on if step.forward.retry_on is not None else props.retry_on
    if STATES_ALL in retry_on:
        raise ValueError(f"{where}: forward steps retry transient errors only, not States.ALL")
    step.forward.attempt_seconds(where)
    if step.compensation is not None:
        step.compensation.attempt_seconds(f"{where} compensation")
    return names


def _check_step_errors(props: SagaProps, step: SagaStep, where: str) -> None:
    """``skip_compensation_on``, ``park_at_once_on`` and ``park_when_compensation_fails`` make sense."""
    if step.skip_compensation_on and step.compensation is None:
        raise ValueError(f"{where}: skip_compensation_on needs a compensation to skip")
    if STATES_ALL in step.skip_compensation_on:
        raise ValueError(f"{where}: skip_compensation_on cannot be States.ALL (name the business errors)")
    if STATES_ALL in step.compensate_on:
        raise ValueError(f"{where}: compensate_on cannot be States.ALL (name the business errors)")
    twice = set(step.compensate_on) & {*step.skip_compensation_on, *props.park_on}
    if twice:
        raise ValueError(f"{where}: errors {sorted(twice)} are given two meanings (compensate_on)")
    if step.park_at_once_on:
        if step.compensation is None:
            raise ValueError(f"{where}: park_at_once_on needs a compensation whose errors it names")
        if STATES_ALL in step.park_at_once_on:
            raise ValueError(f"{where}: park_at_once_on cannot be States.ALL (name the business errors)")
        if props.parked is None:
            raise ValueError(f"{where}: park_at_once_on needs a parked recorder (the item must be announced)")
    if step.park_when_compensation_fails and (step.compensation is None or props.parked is None):
        raise ValueError(f"{where}: park_when_compensation_fails needs a compensation and a parked recorder")


def _check_special_errors(props: SagaProps) -> None:
    """The first step's ``refused_input_errors`` and ``compensate_all_on``: named, one meaning each."""
    first = props.steps[0]
    special = [*props.refused_input_errors, *props.compensate_all_on]
    if STATES_ALL in special:
        raise ValueError("refused_input_errors / compensate_all_on cannot be States.ALL")
    overlap = set(props.refused_input_errors) & set(props.compensate_all_on) | set(special) & set(
        first.skip_compensation_on
    )
    if overlap:
        raise ValueError(f"errors {sorted(overlap)} are given two meanings on step {first.name!r}")


def _check_already_parked(props: SagaProps) -> None:
    """``already_parked_on``: named errors, meaning nothing else on any step, and only with a park to have
    announced the item (the ``parked`` recorder)."""
    held = set(props.already_parked_on)
    if not held:
        return
    if STATES_ALL in held:
        raise ValueError("already_parked_on cannot be States.ALL (name the errors)")
    if props.parked is None:
        raise ValueError("already_parked_on needs a parked recorder (a parked item was announced by it)")
    others = [*props.refused_input_errors, *props.compensate_all_on]
    for step in props.steps:
        others += [*step.skip_compensation_on, *step.compensate_on, *step.park_at_once_on]
    for recorder in (props.completed, props.compensated):
        others += list(recorder.fallback_on) if recorder is not None else []
    if held & set(others):
        raise ValueError(f"errors {sorted(held & set(others))} are given two meanings (already_parked_on)")


def _check_outage(props: SagaProps) -> None:
    """``outage_retry`` and ``outage_errors``: both or neither; named errors the forward steps retry, not the
    throttle retrier's."""
    errors = set(props.outage_errors)
    if props.outage_retry is None:
        if errors:
            raise ValueError("outage_errors needs an outage_retry (the retrier that waits them out)")
        return
    if not errors:
        raise ValueError("outage_retry needs outage_errors (the errors it waits out)")
    if STATES_ALL in errors:
        raise ValueError("outage_errors cannot be States.ALL (a business error would be retried)")
    if props.throttle_retry is not None and errors & set(THROTTLE_ERRORS):
        raise ValueError(f"outage_errors repeat the throttle retrier's {sorted(errors & set(THROTTLE_ERRORS))}")
    if errors - set(props.retry_on):
        raise ValueError(f"outage_errors must be among retry_on; not: {sorted(errors - set(props.retry_on))}")


def _check_fallbacks(props: SagaProps) -> None:
    """``fallback_on`` only on ``completed`` / ``compensated``, named errors, one meaning each."""
    for recorder in (props.parked, props.last_resort):
        if recorder is not None and recorder.fallback_on:
            raise ValueError(f"recorder {recorder.name!r}: fallback_on is for the completed / compensated recorders")
    last = props.steps[-1]
    for recorder in (props.completed, props.compensated):
        if recorder is None or not recorder.fallback_on:
            continue
        if STATES_ALL in recorder.fallback_on:
            raise ValueError(f"recorder {recorder.name!r}: fallback_on cannot be States.ALL (name the errors)")
        if recorder is props.completed and set(recorder.fallback_on) & set(last.skip_compensation_on):
            raise ValueError(f"recorder {recorder.name!r}: fallback_on errors also skip {last.name!r}'s compensation")
    if any(s.final_compensation is not None for s in props.steps) and not (
        props.compensated is not None and props.compensated.fallback_on
    ):
        raise ValueError("final_compensation needs a compensated recorder with fallback_on (it records the outcome)")


def _checked_recorder(recorder: SagaRecorder) -> str:
    """Check one recorder; its state name."""
    _check_path(f"recorder {recorder.name!r}", recorder.result_path)
    if STATES_ALL in recorder.already_recorded_on:
        raise ValueError(f"recorder {recorder.name!r}: already_recorded_on cannot be States.ALL")
    recorder.task.attempt_seconds(f"recorder {recorder.name!r}")
    return recorder.name
