"""The saga's building blocks and its park: the terminal states (built only where the definition
reaches them), the outcome recorders, and ``[parked recorder] -> Fail`` with the last resort behind
the parked recorder."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from constructs_lib.saga.props import SagaProps, SagaRecorder, SagaStep
from constructs_lib.saga.tasks import STATES_ALL, SagaTask, TaskState


class SagaStates:
    """Builds the saga's states in ``scope`` and keeps every one by name (:attr:`states`)."""

    def __init__(self, scope: Construct, props: SagaProps) -> None:
        self.scope = scope
        self.props = props
        self.states: dict[str, sfn.State] = {}
        # Terminal states (built lazily: only what the definition reaches is created).
        self._park_fail: sfn.Fail | None = None
        self._compensated_end: sfn.Succeed | None = None
        self._already: sfn.Succeed | None = None
        self._already_parked: sfn.Fail | None = None
        self._parked: TaskState | None = None

    def build_park(self) -> None:
        """The park: [parked recorder] -> Fail; the recorder failing -> [last resort] -> Fail."""
        props = self.props
        if props.parked is None:
            return
        on_failure: sfn.IChainable | None = None
        if props.last_resort is not None:
            last = props.last_resort
            on_failure = self.recorder(
                SagaRecorder(last.name, last.task, last.result_path),
                then=self.park(),
                on_failure=self.park(),
                failure_path=f"{last.result_path}_error",
            )
        self._parked = self.recorder(
            props.parked, then=self.park(), on_failure=on_failure, failure_path=f"{props.parked.result_path}_error"
        )

    def park_target(self) -> sfn.IChainable:
        """Where a route to the park goes: the parked recorder, else the park state itself."""
        return self._parked if self._parked is not None else self.park()

    def park(self) -> sfn.Fail:
        if self._park_fail is None:
            p = self.props
            self._park_fail = sfn.Fail(self.scope, p.park_error, error=p.park_error, cause=p.park_cause)
            self.states[p.park_error] = self._park_fail
        return self._park_fail

    def compensated(self) -> sfn.Succeed:
        if self._compensated_end is None:
            name = self.props.compensated_state_name
            self._compensated_end = sfn.Succeed(self.scope, name)
            self.states[name] = self._compensated_end
        return self._compensated_end

    def already_recorded(self) -> sfn.Succeed:
        if self._already is None:
            name = self.props.already_recorded_state_name
            self._already = sfn.Succeed(self.scope, name, comment="The outcome was already recorded (a repeat)")
            self.states[name] = self._already
        return self._already

    def catch_already_parked(self, task: TaskState, result_path: str) -> None:
        """``already_parked_on`` -> the execution fails at once (the first catcher of a step's task)."""
        errors = list(self.props.already_parked_on)
        if not errors:
            return
        if self._already_parked is None:
            p = self.props
            name = p.already_parked_state_name
            self._already_parked = sfn.Fail(self.scope, name, error=name, cause=p.already_parked_cause)
            self.states[name] = self._already_parked
        task.add_catch(self._already_parked, errors=errors, result_path=result_path)

    def recorder(
        self,
        recorder: SagaRecorder,
        then: sfn.IChainable | None = None,
        *,
        on_failure: sfn.IChainable | None = None,
        failure_path: str | None = None,
    ) -> TaskState:
        """A recorder task: retries its transient errors; ``already_recorded_on`` -> ``then`` (or the
        already-recorded end); any other error -> ``on_failure`` (its error at ``failure_path``,
        default ``compensation_error_path``: the one the park reads)."""
        task = recorder.task.build(self.scope, recorder.name, result_path=recorder.result_path)
        self.states[recorder.name] = task
        retry_on = recorder.task.retry_on if recorder.task.retry_on is not None else self.props.retry_on
        self.props.forward_retry.apply(task, retry_on)
        if recorder.already_recorded_on:
            target = then if then is not None else self.already_recorded()
            task.add_catch(
                target, errors=list(recorder.already_recorded_on), result_path=f"{recorder.result_path}_error"
            )
        if on_failure is not None:
            task.add_catch(
                on_failure, errors=[STATES_ALL], result_path=failure_path or self.props.compensation_error_path
            )
        if then is not None:
            task.next(then)
        return task

    def compensation_task(
        self, step: SagaStep, name: str, *, task: SagaTask | None = None, no_retry: Sequence[str] = ()
    ) -> TaskState:
        """``step``'s compensation (or ``task``) as state ``name``; ``no_retry``: errors never retried
        (ahead of the compensation's retrier of any error)."""
        assert step.compensation is not None
        result_path = step.compensation_result_path or f"$.{step.undo_name}"
        built = (task or step.compensation).build(self.scope, name, result_path=result_path)
        self.states[name] = built
        never = [*step.park_at_once_on, *no_retry, *self.props.already_parked_on]
        if never:  # never retried: the next try would refuse the same way (or ask for a done effect again)
            built.add_retry(errors=never, max_attempts=0)
        self.catch_already_parked(built, self.props.compensation_error_path)
        (step.compensation_retry or self.props.compensation_retry).apply(built, [STATES_ALL])
        return built
