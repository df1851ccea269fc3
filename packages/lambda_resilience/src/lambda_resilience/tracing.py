"""Tracing on OpenTelemetry: spans around the handler, each SQS record and each step, and the W3C
``traceparent`` carried wherever an order goes (decision 0019).

Our code uses the OpenTelemetry **API** only (``opentelemetry-api``): spans, and the W3C
TraceContext propagator's ``inject`` / ``extract`` on our own carriers: the SQS message attribute
``traceparent``, the saga input's ``traceparent`` field, the provider requests' ``traceparent``
header. Who records and exports the spans is not our code's business: deployed, AWS's OpenTelemetry
Lambda layer (``AWS_LAMBDA_EXEC_WRAPPER=/opt/otel-instrument``) installs the SDK, the botocore and
urllib3 instrumentations and the exporter before the handler is imported; in tests,
:func:`lambda_resilience.testing.in_memory_tracing` installs an SDK provider with an in-memory
exporter. Without either, the API's spans are no-ops and the incoming context passes through
unchanged (same trace, no new span IDs).

The W3C propagator is used explicitly, not the global one: the carriers' field is named
``traceparent`` by our contract whatever ``OTEL_PROPAGATORS`` the layer sets (X-Ray's header is
the AWS SDK's business: the botocore instrumentation injects it into every AWS request).

**On** in Lambda (``LAMBDA_TASK_ROOT`` set) unless ``OTEL_SDK_DISABLED`` (OpenTelemetry's own
switch) or ``POWERTOOLS_TRACE_DISABLED`` (the local deployment plan sets it) is true; forced on or
off by :func:`set_tracing`. **Off** (the local run, the unit tests) costs nothing: OpenTelemetry is
never imported, and the ``traceparent`` is still carried, verbatim or minted, so that the trace ID
on the log lines and in the saga input is the same end to end.

Records of an SQS batch run on worker threads in a copy of the caller's ``contextvars`` context
(:mod:`lambda_resilience.batch.processor`): OpenTelemetry's context is a context variable, so a
record's span joins the handler's without any hand-off.

No customer data in spans: attribute values are IDs we choose (correlation ID, operation, order
ID); exceptions are recorded by type name only (their messages may quote input).
"""

from __future__ import annotations

import functools
import os
import re
import secrets
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeGuard, TypeVar

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

#: The W3C Trace Context header, our SQS message attribute and saga input field (one name).
TRACEPARENT = "traceparent"
#: ``version-traceid-parentid-flags`` (https://www.w3.org/TR/trace-context/#traceparent-header),
#: version 00, lowercase hex, trace and parent IDs not all zeros (checked below).
_TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
#: A task payload's field holding the execution's input (``$$.Execution.Input``), where a step whose
#: payload names its fields finds the ``traceparent`` the execution was started with.
EXECUTION_INPUT = "execution_input"
#: The instrumentation scope of our spans.
TRACER_NAME = "lambda_resilience"
#: Span attribute keys we set (values: IDs only, never customer data).
CORRELATION_ATTRIBUTE = "app.correlation_id"

F = TypeVar("F", bound=Callable[..., Any])
_forced: bool | None = None
#: The ``traceparent`` in scope when tracing is off (passed through verbatim or minted).
_passthrough: ContextVar[str | None] = ContextVar("traceparent", default=None)


def _true(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def tracing_enabled(env: Mapping[str, str] | None = None) -> bool:
    """Whether spans are made: forced by :func:`set_tracing`, else on in Lambda (``LAMBDA_TASK_ROOT``)
    unless ``OTEL_SDK_DISABLED`` or ``POWERTOOLS_TRACE_DISABLED`` is true."""
    if _forced is not None and env is None:
        return _forced
    env = os.environ if env is None else env
    disabled = _true(env.get("OTEL_SDK_DISABLED")) or _true(env.get("POWERTOOLS_TRACE_DISABLED"))
    return bool(env.get("LAMBDA_TASK_ROOT")) and not disabled


def set_tracing(on: bool | None) -> None:
    """Force tracing on or off in this process (None: back to :func:`tracing_enabled`'s rule).
    For tests and the local run's opt-in (:func:`lambda_resilience.testing.in_memory_tracing`)."""
    global _forced
    _forced = on


def is_traceparent(value: object) -> TypeGuard[str]:
    """A well-formed version-00 W3C ``traceparent`` with non-zero trace and parent IDs."""
    if not isinstance(value, str):
        return False
    match = _TRACEPARENT.match(value)
    return bool(match) and set(match.group(1)) != {"0"} and set(match.group(2)) != {"0"}  # type: ignore[union-attr]


def new_traceparent() -> str:
    """A fresh, sampled ``traceparent`` (random trace and parent IDs): the start of a new trace."""
    return f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01"


def xray_trace_header(traceparent: object) -> str | None:
    """The X-Ray trace header of a W3C ``traceparent`` (``Root=1-<8 hex>-<24 hex>;Parent=<16 hex>;Sampled=<0|1>``),
    or None for a malformed one: StartExecution's ``traceHeader``, so that the execution (Step Functions'
    and its task functions' segments, the layer's invocation spans) joins the order's trace, sampled
    exactly as the edge decided (https://docs.aws.amazon.com/xray/latest/devguide/xray-concepts.html#xray-concepts-tracingheader)."""
    if not is_traceparent(traceparent):
        return None
    trace_id, parent, flags = traceparent[3:35], traceparent[36:52], int(traceparent[53:55], 16)
    return f"Root=1-{trace_id[:8]}-{trace_id[8:]};Parent={parent};Sampled={flags & 1}"


def traceparent_from_sqs_record(record: Mapping[str, Any]) -> str | None:
    """The ``traceparent`` message attribute of an SQS record (Lambda event shape), or None."""
    attributes = record.get("messageAttributes") if isinstance(record, Mapping) else None
    attribute = attributes.get(TRACEPARENT) if isinstance(attributes, Mapping) else None
    if not isinstance(attribute, Mapping):
        return None
    value = attribute.get("stringValue") or attribute.get("StringValue")
    return value if isinstance(value, str) else None


def traceparent_from_payload(payload: Any) -> str | None:
    """The ``traceparent`` field of a workflow input (any JSON value), else that of its
    :data:`EXECUTION_INPUT` field (a task payload naming its fields passes ``$$.Execution.Input``
    whole), or None."""
    if not isinstance(payload, Mapping):
        return None
    value = payload.get(TRACEPARENT)
    if value is None and isinstance(payload.get(EXECUTION_INPUT), Mapping):
        value = payload[EXECUTION_INPUT].get(TRACEPARENT)
    return value if isinstance(value, str) else None


def _tracer() -> Tracer:
    from opentelemetry import trace

    return trace.get_tracer(TRACER_NAME)


@functools.cache
def _w3c() -> Any:
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    return TraceContextTextMapPropagator()


def current_traceparent() -> str | None:
    """The ``traceparent`` of the span in scope (or the one passed through when tracing is off), or None."""
    if not tracing_enabled():
        return _passthrough.get()
    carrier: dict[str, str] = {}
    _w3c().inject(carrier)
    return carrier.get(TRACEPARENT)


def current_trace_id() -> str | None:
    """The 32-hex-digit trace ID in scope (for log lines), or None."""
    if not tracing_enabled():
        value = _passthrough.get()
        return value[3:35] if value else None
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    return f"{context.trace_id:032x}" if context.is_valid else None


def inject(carrier: MutableMapping[str, str]) -> MutableMapping[str, str]:
    """Add the ``traceparent`` in scope to ``carrier`` (HTTP headers, a saga input); returns it."""
    value = current_traceparent()
    if value:
        carrier[TRACEPARENT] = value
    return carrier


def sqs_attribute() -> dict[str, dict[str, str]]:
    """The ``traceparent`` SQS message attribute of the context in scope (empty outside any)."""
    value = current_traceparent()
    return {TRACEPARENT: {"DataType": "String", "StringValue": value}} if value else {}


def _error(span: Span, exc: BaseException) -> None:
    from opentelemetry.trace import Status, StatusCode

    # The type name only: an exception's message may quote the input (customer data).
    span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
    span.set_attribute("error.type", type(exc).__name__)


@contextmanager
def _span(name: str, parent: str | None, attributes: Mapping[str, str | None], kind: str) -> Iterator[str]:
    """A span ``name`` whose parent is the ``parent`` traceparent when well formed (else the span in
    scope, else a new trace), linked to the span in scope when the parent comes from a carrier.
    Yields the span's own ``traceparent``. Off: passes ``parent`` (or a minted one) through."""
    if not tracing_enabled():
        value = parent if is_traceparent(parent) else (_passthrough.get() or new_traceparent())
        token = _passthrough.set(value)
        try:
            yield value
        finally:
            _passthrough.reset(token)
        return
    from opentelemetry import trace
    from opentelemetry.trace import Link, SpanKind

    context = None
    links = []
    if is_traceparent(parent):
        invocation = trace.get_current_span().get_span_context()
        if not (invocation.is_valid and f"{invocation.trace_id:032x}" == parent[3:35]):
            # Another trace in scope (the layer's invocation span on Lambda's own X-Ray trace): the
            # order's trace wins, the invocation is linked. Same trace: a child of the span in scope
            # (the invocation's, or our handler's), so the layer's spans and ours are one tree.
            context = _w3c().extract({TRACEPARENT: parent})
            if invocation.is_valid:
                links.append(Link(invocation))
    with _tracer().start_as_current_span(
        name,
        context=context,
        kind=getattr(SpanKind, kind),
        links=links,
        attributes={k: v for k, v in attributes.items() if v},
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            own = current_traceparent()
            if own is None:  # API without SDK and no parent: no span context to carry; mint one
                with _span_passthrough(new_traceparent()) as minted:
                    yield minted
            else:
                yield own
        except BaseException as exc:
            _error(span, exc)
            raise


@contextmanager
def _span_passthrough(value: str) -> Iterator[str]:
    """Carry ``value`` as the current context: a non-recording span with its IDs (API only)."""
    from opentelemetry import trace

    context = _w3c().extract({TRACEPARENT: value})
    with trace.use_span(trace.get_current_span(context), end_on_exit=False):
        yield value


@contextmanager
def record_span(name: str, traceparent: object, **attributes: str | None) -> Iterator[str]:
    """The span of one SQS record: a consumer span continuing the producer's ``traceparent`` (the
    message attribute), else a new trace. Yields the ``traceparent`` to carry further."""
    with _span(name, traceparent if isinstance(traceparent, str) else None, _attributes(attributes), "CONSUMER") as tp:
        yield tp


@contextmanager
def step_span(name: str, traceparent: object, **attributes: str | None) -> Iterator[str]:
    """The span of one saga step, continuing the saga input's ``traceparent``."""
    with _span(name, traceparent if isinstance(traceparent, str) else None, _attributes(attributes), "INTERNAL") as tp:
        yield tp


def _attributes(values: Mapping[str, str | None]) -> dict[str, str | None]:
    return {CORRELATION_ATTRIBUTE if k == "correlation_id" else f"app.{k}": v for k, v in values.items()}


def event_traceparent(event: Any) -> str | None:
    """The one ``traceparent`` an invocation's event carries: a saga payload's, or the one shared by
    every record of an SQS batch (records of several traces: None, each record's span has its own)."""
    if isinstance(event, Mapping) and isinstance(event.get("Records"), list):
        found = {traceparent_from_sqs_record(r) for r in event["Records"]}
        return found.pop() if len(found) == 1 else None
    return traceparent_from_payload(event)


def traced(handler: F) -> F:
    """The Lambda handler in a span (``<function> handler``; errors by type name, responses never), in
    the order's trace when the event carries one (:func:`event_traceparent`): a child of the layer's
    invocation span when that span is in the same trace, else of the event's context (the invocation linked).
    Decided per invocation, so that a test may turn tracing on after import; off, the cost is one check."""

    @functools.wraps(handler)
    def run(event: Any, context: Any) -> Any:
        if not tracing_enabled():
            return handler(event, context)
        function = getattr(context, "function_name", None) or os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "function")
        with _span(f"{function} handler", event_traceparent(event), {}, "SERVER"):  # errors: by type name
            return handler(event, context)

    return run  # type: ignore[return-value]
