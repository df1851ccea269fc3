"""Step Functions task handlers: correlation from the input, idempotency per business operation,
and failures renamed so that a state machine's ``Retry`` / ``Catch`` can tell them apart.

- a **transient** failure is raised as :class:`TransientStepError` (the one name to retry);
- an **unknown** failure (a bug?) as :class:`UnknownStepError` (retried, then caught);
- a **permanent** failure keeps its own type name, so ``Catch`` can route business errors.

AWS counts every failed invocation in ``AWS/Lambda Errors``, business outcomes and retried transient
failures included. A failure the workflow handles by design (a
:class:`~lambda_resilience.exceptions.BusinessOutcome`, or a transient failure it retries) also adds 1
to :data:`EXPECTED_ERRORS_METRIC` (EMF, by default under the function's ``POWERTOOLS_METRICS_NAMESPACE``
and ``POWERTOOLS_SERVICE_NAME``: where ``constructs_lib``'s function alarm reads it), so an alarm on
``Errors - ExpectedErrors`` pages only on the others (bugs, timeouts, crashes).
A transient failure also adds 1 to
:data:`TRANSIENT_FAILURES_METRIC`: retried, so no page each, but a high share of them is trouble in what the
step calls. One of a dependency outside AWS (a
:class:`~lambda_resilience.exceptions.DependencyUnavailable`: a provider's 5xx, timeout or refused connection)
adds 1 to :data:`DEPENDENCY_FAILURES_METRIC` as well, which the step's own throttled DynamoDB calls and
idempotency records left in progress by a crash never reach. An invocation the action marks as its operation's
first call to the dependency (:func:`first_call`: the application's own record says the operation was never
sent, e.g. its intent newly written) adds 1 to :data:`FIRST_CALLS_METRIC`, and, failing on the dependency, 1 to
:data:`FIRST_CALL_FAILURES_METRIC`: an operation refused on every retry counts once there, whatever its retries,
the count a dependency's outage alarm reads (one key refused many times is not many keys refused once).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

from lambda_resilience.classification import TRANSIENT, UNKNOWN, classify
from lambda_resilience.correlation import correlation_scope, from_payload
from lambda_resilience.exceptions import (
    BusinessOutcome,
    ConfigurationError,
    DependencyUnavailable,
    EffectDoneOutcomeNotWritten,
    TransientStepError,
    UnknownStepError,
)
from lambda_resilience.tracing import step_span, traced, traceparent_from_payload

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger, Metrics
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from lambda_resilience.idempotency import IdempotentOperation

#: A step's action: ``action(payload) -> result`` (the payload :class:`StepInput` names).
StepAction = Callable[[dict[str, Any]], dict[str, Any]]
#: ``record(payload, result) -> result``: records the workflow's outcome after the action (see :func:`step_handler`).
OutcomeRecorder = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]
Handler = Callable[[Any, "LambdaContext"], dict[str, Any]]
#: EMF metric (Count, dimension ``service``): failed invocations the workflow handles by design.
EXPECTED_ERRORS_METRIC = "ExpectedErrors"
#: EMF metric (Count, dimension ``service``): failed invocations classified transient (retried by the workflow).
TRANSIENT_FAILURES_METRIC = "TransientFailures"
#: EMF metric (Count, dimension ``service``): the transient failures of a dependency outside AWS
#: (:class:`~lambda_resilience.exceptions.DependencyUnavailable`, raised or the cause of what was raised).
DEPENDENCY_FAILURES_METRIC = "DependencyFailures"
#: EMF metric (Count, dimension ``service``): invocations making their operation's first call to a dependency
#: (:func:`first_call`); retries of the operation never add to it.
FIRST_CALLS_METRIC = "DependencyFirstCalls"
#: EMF metric (Count, dimension ``service``): those of :data:`FIRST_CALLS_METRIC` that failed on the dependency
#: (counted as :data:`DEPENDENCY_FAILURES_METRIC` too): at most one per operation.
FIRST_CALL_FAILURES_METRIC = "DependencyFirstCallFailures"
_FIRST_CALL: ContextVar[bool] = ContextVar("lambda_resilience_first_call", default=False)


def first_call() -> None:
    """Mark the running step's invocation as its operation's first call to a dependency: the application's own
    record says so (e.g. the call's intent written now, not found from an earlier attempt). Call it before the
    dependency is called; the handler counts it once (:data:`FIRST_CALLS_METRIC`), its dependency failure as
    :data:`FIRST_CALL_FAILURES_METRIC`. Outside a :func:`step_handler` invocation it does nothing."""
    _FIRST_CALL.set(True)


@dataclass(frozen=True)
class StepInput:
    """What a step's input means: the operation's idempotency key, the payload the action gets
    (hashed for mismatch checks), fields for log lines and trace annotations, and ``extra``: more
    data the action gets, merged over the payload but not hashed (it describes the call, not the
    operation: e.g. an error text that may differ between two deliveries of the same operation)."""

    idempotency_key: str
    payload: dict[str, Any]
    fields: Mapping[str, Any] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)


def step_handler(
    operation: str,
    action: StepAction,
    *,
    parse: Callable[[Any], StepInput],
    idempotent: IdempotentOperation,
    logger: Logger,
    metrics: Metrics | None = None,
    describe: Callable[[Any], Mapping[str, Any]] = lambda event: {},
    record: OutcomeRecorder | None = None,
    preempt: Callable[[Any], None] | None = None,
) -> Handler:
    """A Lambda handler running ``action`` at most once per ``parse(event).idempotency_key``.

    ``parse`` validates the input (raise a permanent error, e.g. ``InvalidStepInput``, if bad); ``describe`` picks log
    fields from any input, valid or not (for the failure line). ``record``: the step records the workflow's outcome
    itself once its action is done (one state transition less than a separate recorder state). It runs on every
    invocation, a duplicate's cached result included, outside the idempotency record (a crash between the action and the
    write leaves the action's result cached, and the retry writes); whatever it raises is raised as
    :class:`EffectDoneOutcomeNotWritten` (the effect is done: record the outcome another way, never compensate), its
    cause chained, except a :class:`BusinessOutcome`: the recorder's refusal by name, raised as it is (the workflow
    routes it; expected, never paged). ``metrics``: where the failure counts go (flushed after each invocation); default
    a Powertools ``Metrics`` of the function's environment (``POWERTOOLS_METRICS_NAMESPACE``,
    ``POWERTOOLS_SERVICE_NAME``, both required: :class:`ConfigurationError` when the handler is built without them).
    ``preempt(event)``: runs before ``parse`` and the idempotency record; what it raises is the step's failure."""
    metrics = metrics if metrics is not None else default_metrics()

    @idempotent
    def run(command: dict[str, Any]) -> dict[str, Any]:
        return action({**command["payload"], **command.get("extra", {})})

    def handler(event: Any, context: LambdaContext) -> dict[str, Any]:
        known = dict(describe(event))
        with (
            correlation_scope(logger, from_payload(event)) as cid,
            # A child of the context the saga input carries (intake's record span): one trace per order.
            step_span(
                operation,
                traceparent_from_payload(event),
                correlation_id=cid,
                operation=operation,
                **{k: v for k, v in known.items() if isinstance(v, str)},
            ),
            _first_call_counted(metrics),
        ):
            try:
                if preempt is not None:
                    preempt(event)
                step = parse(event)
                logger.info(f"{operation} started", extra=dict(step.fields))
                command = {"idempotency_key": step.idempotency_key, "payload": step.payload, "extra": step.extra}
                result = run(command, context)
                if record is not None:
                    result = _recorded(record, {**step.payload, **step.extra}, result)
                logger.info(f"{operation} done", extra={**known, "result": result})
                return result
            except Exception as exc:
                _fail(exc, operation, known, logger, metrics)

    return metrics.log_metrics(traced(handler))


def default_metrics() -> Metrics:
    """A Powertools ``Metrics`` under the function's ``POWERTOOLS_METRICS_NAMESPACE`` and
    ``POWERTOOLS_SERVICE_NAME`` (Powertools reads them; ``constructs_lib``'s ``PipelineFunction`` sets both
    from the props its alarm reads). Refused without either: the counts would go where no alarm looks."""
    from aws_lambda_powertools import Metrics

    missing = [name for name in ("POWERTOOLS_METRICS_NAMESPACE", "POWERTOOLS_SERVICE_NAME") if not os.environ.get(name)]
    if missing:
        raise ConfigurationError(
            f"step_handler: {' and '.join(missing)} not set: the function's Errors - ExpectedErrors alarm reads "
            "ExpectedErrors under that namespace and service; set them in the function's environment or pass metrics="
        )
    return Metrics()


def _recorded(record: OutcomeRecorder, payload: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    try:
        return record(payload, result)
    except (EffectDoneOutcomeNotWritten, BusinessOutcome):
        raise
    except Exception as exc:
        raise EffectDoneOutcomeNotWritten(f"effect done, outcome not written: {type(exc).__name__}: {exc}") from exc


def _expected(exc: Exception, category: str) -> bool:
    """Handled by the workflow by design: a business outcome, a retried transient failure, or an
    outcome left to the recorder state (unless its cause is unknown: a bug pages)."""
    if isinstance(exc, EffectDoneOutcomeNotWritten):
        return exc.__cause__ is None or classify(exc.__cause__) != UNKNOWN
    return category == TRANSIENT or isinstance(exc, BusinessOutcome)


def _from_dependency(exc: BaseException) -> bool:
    """``exc`` or one of its explicit causes (``raise ... from``) is a dependency's failure."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, DependencyUnavailable):
            return True
        seen.add(id(cause))
        cause = cause.__cause__
    return False


@contextmanager
def _first_call_counted(metrics: Metrics) -> Iterator[None]:
    """One invocation's first-call counts, if the action marked it (:func:`first_call`): the call, and its failure
    when transient and the dependency's (what :func:`_fail` raised chains the action's exception as its cause)."""
    marked = _FIRST_CALL.set(False)
    try:
        yield
    except Exception as exc:
        if _FIRST_CALL.get():
            metrics.add_metric(name=FIRST_CALLS_METRIC, unit="Count", value=1)
            if classify(exc) == TRANSIENT and _from_dependency(exc):
                metrics.add_metric(name=FIRST_CALL_FAILURES_METRIC, unit="Count", value=1)
        raise
    else:
        if _FIRST_CALL.get():
            metrics.add_metric(name=FIRST_CALLS_METRIC, unit="Count", value=1)
    finally:
        _FIRST_CALL.reset(marked)


def _fail(exc: Exception, operation: str, known: Mapping[str, Any], logger: Logger, metrics: Metrics) -> NoReturn:
    """Log ``exc``'s failure line, count it, and raise it classified (transient, unknown or as raised)."""
    category = classify(exc)
    # A business outcome (a declined card) is routed by name, not debugged: its line names the
    # error and category without the stack trace (decision 0022); any other failure keeps it.
    logger.error(
        f"{operation} failed",
        exc_info=not isinstance(exc, BusinessOutcome),
        extra={**known, "error_type": type(exc).__name__, "category": category},
    )
    if _expected(exc, category):
        metrics.add_metric(name=EXPECTED_ERRORS_METRIC, unit="Count", value=1)
    if category == TRANSIENT:
        metrics.add_metric(name=TRANSIENT_FAILURES_METRIC, unit="Count", value=1)
        if _from_dependency(exc):
            metrics.add_metric(name=DEPENDENCY_FAILURES_METRIC, unit="Count", value=1)
    if category == TRANSIENT and not isinstance(exc, TransientStepError):
        raise TransientStepError(f"{type(exc).__name__}: {exc}") from exc
    if category == UNKNOWN and not isinstance(exc, UnknownStepError):
        raise UnknownStepError(f"{type(exc).__name__}: {exc}") from exc
    raise exc
