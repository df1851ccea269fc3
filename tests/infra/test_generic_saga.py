"""The generic saga construct: the definition it builds, its budget, and the prop combinations it refuses at synth."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Template

from constructs_lib.generic_saga import (
    LAMBDA_INIT_SECONDS,
    STATE_LATENCY_SECONDS,
    LambdaTask,
    RetryPolicy,
    Saga,
    SagaProps,
    SagaRecorder,
    SagaStep,
    budget_seconds,
)
from tests.infra.conftest import inline_function_in, join_to_string


def _fn(stack: Stack, name: str) -> lambda_.Function:
    return inline_function_in(stack, name, timeout_s=10)


def _steps(stack: Stack) -> list[SagaStep]:
    return [
        SagaStep("Reserve", LambdaTask(_fn(stack, "R")), compensation=LambdaTask(_fn(stack, "UR"))),
        SagaStep(
            "Charge",
            LambdaTask(_fn(stack, "C")),
            compensation=LambdaTask(_fn(stack, "UC")),
            skip_compensation_on=("Declined",),
        ),
        SagaStep("Notify", LambdaTask(_fn(stack, "N"))),
    ]


def _definition(stack: Stack) -> dict[str, Any]:
    (machine,) = Template.from_stack(stack).find_resources("AWS::StepFunctions::StateMachine").values()
    definition: dict[str, Any] = json.loads(join_to_string(machine["Properties"]["DefinitionString"]))
    return definition


def test_saga_runs_steps_forward_and_compensations_in_reverse() -> None:
    stack = Stack(App(), "SagaUnderTest")
    Saga(stack, "Saga", props=SagaProps(steps=_steps(stack)))
    states = _definition(stack)["States"]
    assert _definition(stack)["StartAt"] == "Reserve"
    assert states["Reserve"]["Next"] == "Charge" and states["Charge"]["Next"] == "Notify"
    # A failure of Notify compensates Charge, then Reserve (reverse order).
    assert {c["Next"] for c in states["Notify"]["Catch"]} == {"UndoCharge"}
    assert states["UndoCharge"]["Next"] == "UndoReserve"
    # Charge's business error means "did nothing": its own compensation is skipped.
    declined = next(c for c in states["Charge"]["Catch"] if c["ErrorEquals"] == ["Declined"])
    assert declined["Next"] == "UndoReserve"
    # A compensation that keeps failing still runs the earlier ones, then parks.
    assert {c["Next"] for c in states["UndoCharge"]["Catch"]} == {"UndoReserveThenPark"}
    assert states["UndoReserveThenPark"]["Next"] == "CompensationFailed"
    assert states["CompensationFailed"]["Type"] == "Fail"
    # Compensations retry any error; forward steps never retry States.ALL.
    assert states["UndoCharge"]["Retry"][0]["ErrorEquals"] == ["States.ALL"]
    assert all("States.ALL" not in r["ErrorEquals"] for r in states["Charge"]["Retry"])
    assert not [s for s in states.values() if s["Type"] in ("Pass", "Choice")]  # no routing-only states


def test_saga_execution_timeout_is_budgeted_from_the_policies() -> None:
    stack = Stack(App(), "SagaUnderTest")
    props = SagaProps(
        steps=_steps(stack), forward_retry=RetryPolicy(max_attempts=1), timeout_margin=Duration.seconds(0)
    )
    saga = Saga(stack, "Saga", props=props)
    # Each Lambda attempt: its 10 s timeout + a failed 10 s Init phase + 2 s of Step Functions latency.
    # 3 forward steps: 2 attempts x 22 s + one 1 s delay each; 2 compensations: 6 attempts x 22 s + 2+4+8+16+30 s.
    assert budget_seconds(props) == 3 * (2 * 22 + 1) + 2 * (6 * 22 + 60)
    assert saga.timeout.to_seconds() == budget_seconds(props)
    assert _definition(stack)["TimeoutSeconds"] == budget_seconds(props)


def _recorders(stack: Stack, **extra: Any) -> SagaProps:
    return SagaProps(
        steps=_steps(stack),
        completed=SagaRecorder("Done", LambdaTask(_fn(stack, "D")), already_recorded_on=("Repeat",)),
        compensated=SagaRecorder("Undone", LambdaTask(_fn(stack, "U")), already_recorded_on=("Repeat",)),
        parked=SagaRecorder("Park", LambdaTask(_fn(stack, "P"))),
        **extra,
    )


def test_saga_failing_recorder_parks_unless_already_recorded() -> None:
    """A recorder's error other than "already recorded" (after its retries) goes to the park, at the
    one error path the park reads; never a failed execution with the outcome unrecorded."""
    stack = Stack(App(), "SagaUnderTest")
    Saga(stack, "Saga", props=_recorders(stack))
    states = _definition(stack)["States"]
    for name in ("Done", "Undone"):
        catches = [(c["ErrorEquals"], c["Next"], c["ResultPath"]) for c in states[name]["Catch"]]
        assert catches == [
            (["Repeat"], "OutcomeAlreadyRecorded", "$.outcome_error"),
            (["States.ALL"], "Park", "$.compensation_error"),
        ], name


def test_saga_failing_park_runs_the_last_resort_then_fails() -> None:
    stack = Stack(App(), "SagaUnderTest")
    props = _recorders(stack, last_resort=SagaRecorder("Shout", LambdaTask(_fn(stack, "S")), result_path="$.shout"))
    saga = Saga(stack, "Saga", props=props)
    states = _definition(stack)["States"]
    assert [(c["ErrorEquals"], c["Next"]) for c in states["Park"]["Catch"]] == [(["States.ALL"], "Shout")]
    assert states["Park"]["Catch"][0]["ResultPath"] == "$.outcome_error"  # the park's error path is kept
    assert states["Shout"]["Next"] == "CompensationFailed"
    assert [(c["ErrorEquals"], c["Next"]) for c in states["Shout"]["Catch"]] == [(["States.ALL"], "CompensationFailed")]
    # Budget: the park and the last resort are on the longest path, each at its worst.
    without = budget_seconds(_recorders(Stack(App(), "Other")))
    attempt = 10 + LAMBDA_INIT_SECONDS + STATE_LATENCY_SECONDS
    assert budget_seconds(props) == without + 4 * attempt + 7
    assert saga.timeout.to_seconds() == budget_seconds(props)


def test_saga_park_at_once_skips_the_earlier_compensations() -> None:
    stack = Stack(App(), "SagaUnderTest")
    steps = _steps(stack)
    steps[1] = SagaStep("Charge", steps[1].forward, compensation=steps[1].compensation, park_at_once_on=("CannotUndo",))
    steps.append(SagaStep("Ship", LambdaTask(_fn(stack, "S")), compensation=LambdaTask(_fn(stack, "US"))))
    Saga(stack, "Saga", props=SagaProps(steps=steps, parked=SagaRecorder("Park", LambdaTask(_fn(stack, "P")))))
    states = _definition(stack)["States"]
    for name in ("UndoCharge", "UndoChargeThenPark"):
        assert states[name]["Retry"][0] == {"ErrorEquals": ["CannotUndo"], "MaxAttempts": 0}, name
        assert states[name]["Retry"][1]["ErrorEquals"] == ["States.ALL"], name
        assert [(c["ErrorEquals"], c["Next"]) for c in states[name]["Catch"]] == [
            (["CannotUndo"], "Park"),
            (["States.ALL"], "UndoReserveThenPark"),
        ], name


def test_saga_park_when_compensation_fails_parks_after_the_retries() -> None:
    stack = Stack(App(), "SagaUnderTest")
    steps = _steps(stack)
    steps[1] = SagaStep(
        "Charge", steps[1].forward, compensation=steps[1].compensation, park_when_compensation_fails=True
    )
    steps.append(SagaStep("Ship", LambdaTask(_fn(stack, "S")), compensation=LambdaTask(_fn(stack, "US"))))
    Saga(stack, "Saga", props=SagaProps(steps=steps, parked=SagaRecorder("Park", LambdaTask(_fn(stack, "P")))))
    states = _definition(stack)["States"]
    for name in ("UndoCharge", "UndoChargeThenPark"):
        assert states[name]["Retry"][0]["ErrorEquals"] == ["States.ALL"], name  # retried first
        assert [(c["ErrorEquals"], c["Next"]) for c in states[name]["Catch"]] == [(["States.ALL"], "Park")], name
    # The other compensations keep running the earlier ones before the park.
    assert [(c["ErrorEquals"], c["Next"]) for c in states["UndoShip"]["Catch"]] == [
        (["States.ALL"], "UndoChargeThenPark")
    ]


def test_saga_park_when_compensation_fails_needs_a_parked_recorder() -> None:
    stack = Stack(App(), "SagaUnderTest")
    steps = _steps(stack)
    steps[1] = SagaStep(
        "Charge", steps[1].forward, compensation=steps[1].compensation, park_when_compensation_fails=True
    )
    with pytest.raises(ValueError, match="park_when_compensation_fails needs a compensation and a parked recorder"):
        Saga(stack, "Saga", props=SagaProps(steps=steps))


def test_saga_park_on_parks_a_forward_step_without_compensating() -> None:
    """``park_on``: a forward step's error that outlasted its retries (a throttle) parks at once, nothing undone,
    at the error path the park reads; ahead of the compensations' ``States.ALL``."""
    stack = Stack(App(), "SagaUnderTest")
    steps = _steps(stack)
    parked = SagaRecorder("Park", LambdaTask(_fn(stack, "P")))
    Saga(stack, "Saga", props=SagaProps(steps=steps, parked=parked, park_on=("Lambda.TooManyRequestsException",)))
    states = _definition(stack)["States"]
    for name in ("Reserve", "Charge", "Notify"):
        catches = [(c["ErrorEquals"], c["Next"], c["ResultPath"]) for c in states[name]["Catch"]]
        assert catches[-2:][0] == (["Lambda.TooManyRequestsException"], "Park", "$.compensation_error"), name
        assert catches[-1][0] == ["States.ALL"], name


def test_saga_park_on_needs_a_parked_recorder() -> None:
    stack = Stack(App(), "SagaUnderTest")
    with pytest.raises(ValueError, match="park_on needs a parked recorder"):
        Saga(stack, "Saga", props=SagaProps(steps=_steps(stack), park_on=("Lambda.TooManyRequestsException",)))


def test_saga_alarms_on_aborted_executions() -> None:
    from aws_cdk import aws_sns as sns

    stack = Stack(App(), "SagaUnderTest")
    saga = Saga(stack, "Saga", props=SagaProps(steps=_steps(stack), alarm_topic=sns.Topic(stack, "T")))
    assert set(saga.alarms) == {"failed", "timed_out", "aborted", "throttled"}
    Template.from_stack(stack).has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "AWS/States",
            "MetricName": "ExecutionsAborted",
            "Statistic": "Sum",
            "Threshold": 0,
            "ComparisonOperator": "GreaterThanThreshold",
            "EvaluationPeriods": 1,
        },
    )


def _refused(make: Any) -> str:
    stack = Stack(App(), "SagaUnderTest")
    with pytest.raises(ValueError) as caught:
        Saga(stack, "Saga", props=make(stack))
    return str(caught.value)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda s: SagaProps(steps=[]), "at least one step"),
        (
            lambda s: SagaProps(steps=[SagaStep("A", LambdaTask(_fn(s, "A")), skip_compensation_on=("E",))]),
            "skip_compensation_on needs a compensation",
        ),
        (
            lambda s: SagaProps(
                steps=[
                    SagaStep(
                        "A",
                        LambdaTask(_fn(s, "A")),
                        compensation=LambdaTask(_fn(s, "U")),
                        skip_compensation_on=("States.ALL",),
                    )
                ]
            ),
            "cannot be States.ALL",
        ),
        (
            lambda s: SagaProps(steps=[SagaStep("A", LambdaTask(_fn(s, "A")), compensation_name="UndoA")]),
            "without a compensation",
        ),
        (
            lambda s: SagaProps(steps=[SagaStep("A", LambdaTask(_fn(s, "A"), retry_on=("States.ALL",)))]),
            "transient errors only",
        ),
        (
            lambda s: SagaProps(steps=[SagaStep("A", LambdaTask(_fn(s, "A")))], compensate_all_on=("Undo",)),
            "compensate_all_on needs",
        ),
        (
            lambda s: SagaProps(
                steps=[SagaStep("A", LambdaTask(_fn(s, "A")))],
                parked=SagaRecorder("Park", LambdaTask(_fn(s, "P"))),
            ),
            "nothing can park",
        ),
        (
            lambda s: SagaProps(steps=_steps(s), refused_input_errors=("Unknown",), compensate_all_on=("Unknown",)),
            "two meanings",
        ),
        (
            lambda s: SagaProps(
                steps=[
                    SagaStep("A", LambdaTask(_fn(s, "A")), compensation=LambdaTask(_fn(s, "U")), park_at_once_on=("X",))
                ]
            ),
            "park_at_once_on needs a parked recorder",
        ),
        (
            lambda s: SagaProps(
                steps=[SagaStep("A", LambdaTask(_fn(s, "A")), park_at_once_on=("X",))],
                parked=SagaRecorder("Park", LambdaTask(_fn(s, "P"))),
            ),
            "park_at_once_on needs a compensation",
        ),
        (
            lambda s: SagaProps(
                steps=[
                    SagaStep(
                        "A",
                        LambdaTask(_fn(s, "A")),
                        compensation=LambdaTask(_fn(s, "U")),
                        park_at_once_on=("States.ALL",),
                    )
                ],
                parked=SagaRecorder("Park", LambdaTask(_fn(s, "P"))),
            ),
            "park_at_once_on cannot be States.ALL",
        ),
        (
            lambda s: SagaProps(steps=_steps(s), last_resort=SagaRecorder("Shout", LambdaTask(_fn(s, "S")))),
            "last_resort: it runs when the parked recorder fails",
        ),
        (lambda s: SagaProps(steps=[SagaStep("A", LambdaTask(_fn(s, "A")), result_path="$")]), "must start with '$.'"),
        (
            lambda s: SagaProps(steps=[SagaStep("A", LambdaTask(_fn(s, "A"))), SagaStep("A", LambdaTask(_fn(s, "B")))]),
            "state names must be unique",
        ),
        (
            lambda s: SagaProps(
                steps=[SagaStep("A", LambdaTask(lambda_.Function.from_function_name(s, "Imported", "imported")))]
            ),
            "needs timeout=",
        ),
    ],
)
def test_saga_rejects_bad_prop_combinations_at_synth(make: Any, message: str) -> None:
    assert message in _refused(make)


def test_saga_fallback_recorders_run_only_when_the_last_task_could_not_record() -> None:
    """``fallback_on``: the last step and the last compensation record the outcome themselves and end
    the execution; the recorders run only on the named "effect done, outcome not written" error,
    which is never retried and never compensated (decision 0024)."""
    stack = Stack(App(), "SagaUnderTest")
    record = LambdaTask(_fn(stack, "Rec"))
    steps = _steps(stack)
    steps[0] = SagaStep(
        "Reserve",
        LambdaTask(_fn(stack, "R2")),
        compensation=LambdaTask(_fn(stack, "UR2")),
        final_compensation=LambdaTask(_fn(stack, "URF"), payload={"record": True}),
    )
    Saga(
        stack,
        "Saga",
        props=SagaProps(
            steps=steps,
            completed=SagaRecorder("RecordDone", record, fallback_on=("NotWritten",)),
            compensated=SagaRecorder("RecordUndone", record, fallback_on=("NotWritten",)),
            parked=SagaRecorder("Park", record),
        ),
    )
    states = _definition(stack)["States"]
    assert states["Notify"].get("End") is True
    assert [c["Next"] for c in states["Notify"]["Catch"]] == ["RecordDone", "UndoCharge"]
    assert states["Notify"]["Catch"][0]["ErrorEquals"] == ["NotWritten"]
    assert states["UndoReserve"].get("End") is True
    assert states["UndoReserve"]["Retry"][0] == {"ErrorEquals": ["NotWritten"], "MaxAttempts": 0}
    assert [c["Next"] for c in states["UndoReserve"]["Catch"]] == ["RecordUndone", "Park"]
    assert states["UndoReserve"]["Parameters"] == {"record": True}  # payload_response_only: the payload itself
    # The copy before the park is the plain compensation: it records nothing and parks after.
    assert "Parameters" not in states["UndoReserveThenPark"] or "record" not in json.dumps(
        states["UndoReserveThenPark"]["Parameters"]
    )
    assert states["UndoReserveThenPark"]["Next"] == "Park"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"parked": True}, "fallback_on is for"),
        ({"completed_fallback": ("States.ALL",)}, "cannot be States.ALL"),
        ({"final_only": True}, "final_compensation needs"),
    ],
)
def test_saga_refuses_fallbacks_that_cannot_keep_their_promise(change: dict[str, Any], message: str) -> None:
    stack = Stack(App(), "SagaUnderTest")
    record = LambdaTask(_fn(stack, "Rec"))
    steps = _steps(stack)
    kwargs: dict[str, Any] = {"steps": steps, "parked": SagaRecorder("Park", record)}
    if "parked" in change:
        kwargs["parked"] = SagaRecorder("Park", record, fallback_on=("X",))
    if "completed_fallback" in change:
        kwargs["completed"] = SagaRecorder("Done", record, fallback_on=change["completed_fallback"])
    if "final_only" in change:
        steps[0] = SagaStep(
            "Reserve",
            LambdaTask(_fn(stack, "R2")),
            compensation=LambdaTask(_fn(stack, "UR2")),
            final_compensation=LambdaTask(_fn(stack, "URF")),
        )
    with pytest.raises(ValueError, match=message):
        Saga(stack, "Saga", props=SagaProps(**kwargs))


def test_saga_default_retries_cover_what_the_step_middleware_raises() -> None:
    """With default props, a Lambda step retries the middleware's TransientStepError and UnknownStepError
    (Step Functions names a Lambda function error by its ``errorType``, the exception's class name), besides
    Lambda's service errors: a throttled DynamoDB call in a step is retried, not compensated."""
    from lambda_resilience.exceptions import TransientStepError, UnknownStepError

    stack = Stack(App(), "SagaUnderTest")
    Saga(stack, "Saga", props=SagaProps(steps=_steps(stack)))
    states = _definition(stack)["States"]
    for name in ("Reserve", "Charge", "Notify"):
        retried = {error for retrier in states[name]["Retry"] for error in retrier["ErrorEquals"]}
        assert {TransientStepError.__name__, UnknownStepError.__name__} <= retried, name
        assert "Lambda.TooManyRequestsException" in retried, name


def test_saga_default_refuses_the_input_the_step_middleware_rejects() -> None:
    """With default props, the first step's ``InvalidStepInput`` (what ``step_handler`` raises when ``parse``
    rejects the input) ends the execution at once as refused: not the catch-all, which would run every
    compensation with the same input (each failing, retried for minutes) and park."""
    from lambda_resilience.exceptions import InvalidStepInput

    stack = Stack(App(), "SagaUnderTest")
    Saga(stack, "Saga", props=SagaProps(steps=_steps(stack)))
    states = _definition(stack)["States"]
    refused = [c for c in states["Reserve"]["Catch"] if InvalidStepInput.__name__ in c["ErrorEquals"]]
    assert [c["Next"] for c in refused] == ["InputRefused"]
    assert states["InputRefused"]["Type"] == "Fail"
    assert all(
        "Catch" not in states[n] or not any(InvalidStepInput.__name__ in c["ErrorEquals"] for c in states[n]["Catch"])
        for n in ("Charge", "Notify")
    )


def test_saga_already_parked_on_fails_at_once_from_every_step_and_compensation() -> None:
    """``already_parked_on``: the item is parked (announced) outside the execution; every forward task and
    compensation catches it first and the execution fails at once, never retried, never compensated or parked."""
    stack = Stack(App(), "SagaUnderTest")
    Saga(stack, "Saga", props=_recorders(stack, already_parked_on=("Held",), already_parked_state_name="Held"))
    states = _definition(stack)["States"]
    tasks = ["Reserve", "Charge", "Notify", "UndoReserve", "UndoCharge", "UndoReserveThenPark"]
    for name in tasks:
        assert (states[name]["Catch"][0]["ErrorEquals"], states[name]["Catch"][0]["Next"]) == (["Held"], "Held"), name
    for name in tasks[3:]:
        assert states[name]["Retry"][0] == {"ErrorEquals": ["Held"], "MaxAttempts": 0}, name
    assert all("Held" not in str(states[name]) for name in ("Done", "Undone", "Park"))
    assert (states["Held"]["Type"], states["Held"]["Error"]) == ("Fail", "Held")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"already_parked_on": ("States.ALL",)}, "cannot be States.ALL"),
        ({"already_parked_on": ("Declined",)}, "two meanings"),
        ({"already_parked_on": ("Held",), "parked": None}, "needs a parked recorder"),
    ],
)
def test_saga_already_parked_on_refuses_what_it_cannot_keep(extra: dict[str, Any], message: str) -> None:
    def make(stack: Stack) -> SagaProps:
        if "parked" in extra:  # no park: nothing announced the parked item
            return SagaProps(steps=_steps(stack), already_parked_on=extra["already_parked_on"])
        return _recorders(stack, **extra)

    assert message in _refused(make)


def test_saga_outage_retry_waits_out_its_errors_after_the_throttle_and_before_the_rest() -> None:
    """``outage_retry``: the errors meaning "a dependency is down, the item is fine" get a retrier of their own,
    after the throttle's and ahead of ``forward_retry`` (Step Functions uses the first retrier naming the
    error), and the execution timeout budgets it (each attempt a whole invocation)."""
    stack = Stack(App(), "SagaUnderTest")
    outage = RetryPolicy(interval=Duration.seconds(2), max_attempts=4, max_delay=Duration.seconds(5))
    props = SagaProps(
        steps=_steps(stack),
        forward_retry=RetryPolicy(max_attempts=1),
        throttle_retry=RetryPolicy(max_attempts=2),
        outage_retry=outage,
        outage_errors=("TransientStepError",),
        timeout_margin=Duration.seconds(0),
    )
    Saga(stack, "Saga", props=props)
    retries = _definition(stack)["States"]["Charge"]["Retry"]
    assert [r["ErrorEquals"] for r in retries] == [
        ["Lambda.TooManyRequestsException"],
        ["TransientStepError"],
        [e for e in props.retry_on if e not in ("Lambda.TooManyRequestsException", "TransientStepError")],
    ]
    assert (retries[1]["IntervalSeconds"], retries[1]["MaxAttempts"], retries[1]["MaxDelaySeconds"]) == (2, 4, 5)
    without = SagaProps(
        steps=_steps(Stack(App(), "Other")),
        forward_retry=RetryPolicy(max_attempts=1),
        throttle_retry=RetryPolicy(max_attempts=2),
        timeout_margin=Duration.seconds(0),
    )
    # Three forward steps, each: 4 more whole attempts (22 s each) and delays of 2 + 4 + 5 + 5 s.
    assert budget_seconds(props) - budget_seconds(without) == 3 * (4 * 22 + 16)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"outage_errors": ("TransientStepError",)}, "outage_errors needs an outage_retry"),
        ({"outage_retry": RetryPolicy()}, "outage_retry needs outage_errors"),
        ({"outage_retry": RetryPolicy(), "outage_errors": ("States.ALL",)}, "outage_errors cannot be States.ALL"),
        (
            {"outage_retry": RetryPolicy(), "outage_errors": ("Lambda.TooManyRequestsException",)},
            "outage_errors repeat the throttle retrier's",
        ),
        ({"outage_retry": RetryPolicy(), "outage_errors": ("Declined",)}, "outage_errors must be among retry_on"),
    ],
)
def test_saga_outage_retry_refuses_what_it_cannot_keep(extra: dict[str, Any], message: str) -> None:
    stack = Stack(App(), "SagaUnderTest")
    with pytest.raises(ValueError, match=message):
        Saga(stack, "Saga", props=SagaProps(steps=_steps(stack), throttle_retry=RetryPolicy(), **extra))
