"""AWS's OpenTelemetry Lambda layer's invocation span, for a function deployed with the layer
(``AWS_LAMBDA_EXEC_WRAPPER=/opt/otel-instrument``) while a recording OpenTelemetry SDK is installed
(the in-memory tracing of the tests): the layer's aws-lambda instrumentation wraps every invocation in a
SERVER span named after the handler, parented on Lambda's own X-Ray trace header (the distro's
propagators read ``_X_AMZN_TRACE_ID``; decision 0019). Written here because no library emulates the
layer; without the layer or a recording SDK this is a no-op.

Lambda's header: the caller's trace when the caller passed one (a Step Functions task in an execution
started with a ``traceHeader``: :func:`local_cloud.trace_header.task_trace_header`), else a new trace,
which X-Ray's default rule samples at 5% beyond its reservoir; the emulator takes the common case (not
sampled), so the tests are deterministic.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

LAYER_WRAPPER = "/opt/otel-instrument"
#: The instrumentation scope of the layer's invocation span.
LAYER_SCOPE = "opentelemetry.instrumentation.aws_lambda"
_HEADER = re.compile(r"Root=1-([0-9a-f]{8})-([0-9a-f]{24});Parent=([0-9a-f]{16});Sampled=([01])")


def _parent(xray_header: str | None) -> Any:
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    match = _HEADER.match(xray_header or "")
    if match is None:  # a new trace, not sampled (see the module docstring)
        trace_id, span_id, sampled = int(secrets.token_hex(16), 16), int(secrets.token_hex(8), 16), 0
    else:
        trace_id, span_id, sampled = int(match[1] + match[2], 16), int(match[3], 16), int(match[4])
    return NonRecordingSpan(SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(sampled)))


@contextmanager
def layer_invocation(env: Mapping[str, str], handler: str, xray_header: str | None) -> Iterator[None]:
    """The layer's invocation span around one invocation (see the module docstring), or nothing."""
    if env.get("AWS_LAMBDA_EXEC_WRAPPER") != LAYER_WRAPPER:
        yield
        return
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
    except ImportError:
        yield
        return
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        yield
        return
    context = trace.set_span_in_context(_parent(xray_header))
    with trace.get_tracer(LAYER_SCOPE).start_as_current_span(handler, context=context, kind=trace.SpanKind.SERVER):
        yield
