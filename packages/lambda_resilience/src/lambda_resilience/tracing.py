"""X-Ray tracing with Powertools Tracer: AWS SDK and provider HTTPS calls as subsegments, the
correlation ID and the caller's own keys as annotations (searchable in the X-Ray console).

Cost at cold start: Powertools imports the X-Ray SDK and patches ``botocore`` and ``httplib``
(urllib3, which the HTTPS provider adapters use, runs on ``http.client``) only when tracing is
on; measured by ``make bench`` (``tracer_import_ms``). ``POWERTOOLS_TRACE_DISABLED=true`` (the
local run and the tests) skips all of it, import included. Responses are never captured as trace metadata
(``capture_response=False``): a trace must not carry customer data.

The records of an SQS batch run on a thread pool (``lambda_resilience.batch``); the X-Ray SDK keeps its
current entity per thread, so :func:`in_worker` hands the handler's entity to each worker (the
SDK's documented pattern for threads: ``get_trace_entity`` / ``set_trace_entity``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from aws_lambda_powertools import Tracer


#: Modules whose calls become subsegments.
PATCHED_MODULES = ("botocore", "httplib")

F = TypeVar("F", bound=Callable[..., Any])
_tracer: Tracer | None = None
_lock = threading.Lock()


def tracing_enabled(env: Mapping[str, str] | None = None) -> bool:
    """On in Lambda (``LAMBDA_TASK_ROOT``) unless ``POWERTOOLS_TRACE_DISABLED`` is true: the rule
    Powertools applies, checked first so that a disabled tracer costs no import at all (Powertools'
    own disabled Tracer still imports the X-Ray SDK, ~200 ms outside Lambda)."""
    env = os.environ if env is None else env
    disabled = env.get("POWERTOOLS_TRACE_DISABLED", "").strip().lower() in ("1", "true", "yes", "on")
    return bool(env.get("LAMBDA_TASK_ROOT")) and not disabled


def get_tracer() -> Tracer | None:
    """The process-wide Powertools Tracer, created once, or None when tracing is off."""
    global _tracer
    if _tracer is None and tracing_enabled():
        with _lock:
            if _tracer is None:
                from aws_lambda_powertools import Tracer as PowertoolsTracer

                _tracer = PowertoolsTracer(patch_modules=list(PATCHED_MODULES))
    return _tracer


def traced(handler: F) -> F:
    """The Lambda handler, traced (errors recorded, responses never); unchanged when tracing is off."""
    tracer = get_tracer()
    if tracer is None:
        return handler
    return tracer.capture_lambda_handler(handler, capture_response=False)  # type: ignore[return-value]


def annotate(**values: str | None) -> None:
    """Put the non-empty ``values`` on the handler's segment as annotations."""
    tracer = get_tracer()
    if tracer is None or tracer.disabled:
        return
    for key, value in values.items():
        if value is not None and value != "":
            tracer.put_annotation(key=key, value=value)


@contextmanager
def record_segment(name: str, **annotations: str | None) -> Iterator[None]:
    """A subsegment for one SQS record, annotated (its correlation ID), when tracing is on."""
    tracer = get_tracer()
    if tracer is None or tracer.disabled:
        yield
        return
    with tracer.provider.in_subsegment(name) as subsegment:
        for key, value in annotations.items():
            if value:
                subsegment.put_annotation(key, value)
        yield


def in_worker(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``fn`` run with the calling thread's X-Ray entity, so its AWS calls join the handler's trace."""
    tracer = get_tracer()
    if tracer is None or tracer.disabled:
        return fn
    from aws_xray_sdk.core import xray_recorder

    entity = xray_recorder.get_trace_entity()

    def run(item: Any) -> Any:
        xray_recorder.set_trace_entity(entity)
        return fn(item)

    return run
