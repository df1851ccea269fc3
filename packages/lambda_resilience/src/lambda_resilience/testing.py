"""Test helpers for handlers built on this package (as Powertools ships its own for its users).

- :class:`FakeLambdaContext`: what Powertools and the handlers read from a Lambda context, with
  a deadline that follows any clock you pass (wall clock by default).
- :class:`LogLines`: a stream to hand a Powertools ``Logger`` (``logger_handler``) that keeps
  its JSON lines and sorts them into log records, EMF metric documents and anything else.
- :func:`serialised_dynamodb`: moto (``mock_aws``) answers DynamoDB requests one at a time, so a
  test of concurrent conditional writes (moto checks a condition and stores the item in two
  steps) sees AWS's per-item atomicity.
- :func:`in_memory_tracing`: tracing on, every finished span kept in memory (OpenTelemetry SDK's
  ``InMemorySpanExporter`` behind a ``SimpleSpanProcessor``), for asserting a trace's shape.
- :func:`new_process_logger`: before loading a handler again in the same process, so that its Powertools
  ``Logger`` is configured from the environment you load it under, as at a cold start.

Nothing here is imported by the middleware itself; moto is only needed by the function that uses it.
"""

from __future__ import annotations

import io
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from unittest import mock

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

#: The account and region the fake context's ARN names (moto's default account).
FAKE_ACCOUNT = "123456789012"
FAKE_REGION = "us-east-1"


def new_process_logger(service: str) -> None:
    """Let the next Powertools ``Logger`` of ``service`` start from a new logger, as a cold start's process does.

    A logger is global by name in a process, and Powertools leaves one it configured before as it is, level
    included: a handler loaded again under another ``POWERTOOLS_LOG_LEVEL`` would keep the first level. The
    name (and its children's) is dropped from logging's registry; a module loaded before keeps its logger.
    """
    registry = logging.Logger.manager.loggerDict
    for name in [n for n in list(registry) if n == service or n.startswith(f"{service}.")]:
        registry.pop(name, None)


class FakeLambdaContext:
    """A Lambda context for tests: name, memory, request ID, ARN, log names and the remaining time.

    ``clock`` (seconds, monotonic) sets the deadline: ``timeout_seconds`` after construction.
    Cast it to ``aws_lambda_powertools.utilities.typing.LambdaContext`` where a type is needed.
    """

    def __init__(
        self,
        function_name: str = "test-function",
        timeout_seconds: float = 30.0,
        memory_limit_in_mb: int = 512,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = memory_limit_in_mb
        self.aws_request_id = str(uuid.uuid4())
        self.invoked_function_arn = f"arn:aws:lambda:{FAKE_REGION}:{FAKE_ACCOUNT}:function:{function_name}"
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = "test"
        self._clock = clock
        self._ends_at = clock() + timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left before the (fake) timeout, never negative."""
        return max(0, int(1000 * (self._ends_at - self._clock())))


class LogLines(io.StringIO):
    """A text stream that keeps what is written; :meth:`records` parses the complete lines."""

    def __init__(self) -> None:
        super().__init__()
        self._guard = threading.Lock()

    def write(self, text: str) -> int:
        with self._guard:  # handler threads (a concurrent batch) write to one stream
            return super().write(text)

    def records(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
        """(log records, EMF metric documents, other non-empty lines), in the order written."""
        with self._guard:
            text = self.getvalue()
        logs: list[dict[str, Any]] = []
        metrics: list[dict[str, Any]] = []
        other: list[str] = []
        for line in filter(str.strip, text.split("\n")[:-1]):  # the last piece is an unfinished line
            try:
                parsed = json.loads(line)
            except ValueError:
                other.append(line)
                continue
            if isinstance(parsed, dict) and "_aws" in parsed:
                metrics.append(parsed)
            elif isinstance(parsed, dict) and "level" in parsed:
                logs.append(parsed)
            else:
                other.append(line)
        return logs, metrics, other


@contextmanager
def serialised_dynamodb() -> Iterator[None]:
    """Within this context moto answers DynamoDB requests made in this process one at a time.

    One lock around moto's handling of each request (``mock_aws`` answers through botocore's
    ``before-send`` event): coarser than AWS's per-item atomicity, so a race a test provokes
    still resolves in one of the orders AWS allows.
    """
    from moto.core.botocore_stubber import BotocoreStubber

    lock = threading.RLock()
    original = BotocoreStubber.__call__

    def answer(stubber: Any, event_name: str, request: Any, **kwargs: Any) -> Any:
        if ".dynamodb." not in f"{event_name}.":
            return original(stubber, event_name, request, **kwargs)
        with lock:
            return original(stubber, event_name, request, **kwargs)

    with mock.patch.object(BotocoreStubber, "__call__", answer):
        yield


_exporter: InMemorySpanExporter | None = None
_tracing_lock = threading.Lock()


@contextmanager
def in_memory_tracing() -> Iterator[InMemorySpanExporter]:
    """Tracing forced on in this process, finished spans kept by the yielded exporter
    (``get_finished_spans()``); off again on exit. Needs ``opentelemetry-sdk``.

    The SDK provider is installed once per process as the global one (OpenTelemetry allows one);
    the exporter is cleared on entry and exit, so each use sees its own spans only.
    """
    global _exporter
    from opentelemetry import trace

    from lambda_resilience.tracing import set_tracing

    with _tracing_lock:
        if _exporter is None:
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import SimpleSpanProcessor
            from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

            provider = TracerProvider()
            exporter = InMemorySpanExporter()
            provider.add_span_processor(SimpleSpanProcessor(exporter))
            trace.set_tracer_provider(provider)
            if trace.get_tracer_provider() is not provider:
                raise RuntimeError("another global TracerProvider was set first: spans would not reach the exporter")
            _exporter = exporter
        exporter = _exporter
    exporter.clear()
    set_tracing(True)
    try:
        yield exporter
    finally:
        set_tracing(None)
        exporter.clear()
