"""Capture what the handlers print (Powertools JSON logs, EMF metrics), line by line."""

from __future__ import annotations

import io
import json
import logging
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO
from unittest import mock

from local_cloud.calls import outside_active


class LineCapture(io.TextIOBase):
    """A thread-safe text stream that keeps complete lines (each thread buffers its own partial line)."""

    def __init__(self, echo: TextIO | None = None) -> None:
        super().__init__()
        self.lines: list[str] = []
        #: The lines not written by a provider stand-in (:func:`local_cloud.calls.outside_the_pipeline`):
        #: the deployment's own, which its log groups would bill.
        self.pipeline_lines: list[str] = []
        self._echo = echo
        self._lock = threading.Lock()
        # Parsed so far (records() is called repeatedly on a growing capture: parse each line once).
        self._parsed = 0
        self._logs: list[dict[str, Any]] = []
        self._metrics: list[dict[str, Any]] = []
        self._other: list[str] = []
        self._partial = threading.local()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        buffer = getattr(self._partial, "text", "") + text
        *complete, rest = buffer.split("\n")
        self._partial.text = rest
        if complete:
            kept = [line for line in complete if line.strip()]
            with self._lock:
                self.lines.extend(kept)
                if not outside_active():
                    self.pipeline_lines.extend(kept)
                if self._echo is not None:
                    self._echo.write("\n".join(complete) + "\n")
        return len(text)

    def flush(self) -> None:
        if self._echo is not None:
            self._echo.flush()

    def records(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
        """(log records, EMF metric documents, other lines), in capture order."""
        with self._lock:
            new = self.lines[self._parsed :]
            self._parsed = len(self.lines)
            for line in new:
                try:
                    doc = json.loads(line)
                except json.JSONDecodeError:
                    self._other.append(line)
                    continue
                if isinstance(doc, dict) and "_aws" in doc:
                    self._metrics.append(doc)
                elif isinstance(doc, dict) and "level" in doc:
                    self._logs.append(doc)
                else:
                    self._other.append(line)
            return list(self._logs), list(self._metrics), list(self._other)


def _powertools_handlers() -> Iterator[logging.StreamHandler[Any]]:
    from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

    for logger in list(logging.Logger.manager.loggerDict.values()):
        if not isinstance(logger, logging.Logger):
            continue
        for handler in logger.handlers:
            if isinstance(handler, logging.StreamHandler) and isinstance(handler.formatter, LambdaPowertoolsFormatter):
                yield handler


def forget_powertools_logger(service: str) -> None:
    """Let the next Powertools ``Logger`` of ``service`` start from a new logger, as in a new process.

    A cold start is a new process on Lambda: its first ``Logger`` sets the service's logger up (level from the
    function's environment, handler, formatter). In one process a logger is global by name, and Powertools
    leaves one it configured before as it is, level included: an earlier load at CRITICAL (another test's quiet
    handlers) silenced a later function's INFO lines. The name (and its children's) is dropped from logging's
    registry, so ``logging.getLogger`` makes a new one; a module loaded before keeps the logger it holds.
    """
    registry = logging.Logger.manager.loggerDict
    for name in [n for n in list(registry) if n == service or n.startswith(f"{service}.")]:
        registry.pop(name, None)


def point_powertools_loggers_at(stream: TextIO | io.TextIOBase) -> None:
    """Re-point every Powertools logger handler created so far at ``stream``."""
    for handler in _powertools_handlers():
        handler.setStream(stream)


@contextmanager
def capture_stdout(capture: LineCapture) -> Iterator[LineCapture]:
    """Send ``sys.stdout`` (new Powertools loggers) and Powertools' EMF prints to ``capture``.

    EMF documents are printed with the builtin ``print``; we shadow it in that one module, so
    metrics are captured even when something else (a test runner) swaps ``sys.stdout`` later.
    """
    from aws_lambda_powertools.metrics.provider.cloudwatch_emf import cloudwatch as emf

    def emf_print(*args: Any, **kwargs: Any) -> None:
        kwargs.pop("file", None)
        print(*args, file=capture, **kwargs)

    saved = sys.stdout
    sys.stdout = capture
    try:
        with mock.patch.object(emf, "print", emf_print, create=True):
            yield capture
    finally:
        sys.stdout = saved
