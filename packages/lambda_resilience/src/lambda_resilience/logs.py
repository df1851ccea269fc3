"""Structured logs that are safe and bounded: no personal data, no line over 16 KB.

Built on Powertools Logger: :class:`SafeLogFormatter` is a ``LambdaPowertoolsFormatter`` that
overrides ``serialize`` (Powertools' documented extension point for custom formatters). Values
under sensitive keys are erased with Powertools' data masking utility, imported only when a
log record carries such a key (it costs ~12 ms of import otherwise paid at every cold start).

Why a line limit: CloudWatch Logs accepts events of up to 256 KB, but a 1.6 MB error line (a
message with a 10,000-entry list embedded in an exception) is truncated by the service mid-JSON and lost
to every query. We cut error messages and tracebacks instead, never the whole line, and never
log a payload in the first place.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

from lambda_resilience.tracing import current_trace_id

#: No serialized log line is longer than this (bytes of UTF-8).
MAX_LINE_BYTES = 16 * 1024
#: ``message`` is cut to this many characters.
MAX_MESSAGE_CHARS = 2048
#: A traceback keeps its first and last characters (the raising frame and the error are at the end).
MAX_EXCEPTION_HEAD_CHARS = 1024
MAX_EXCEPTION_TAIL_CHARS = 4096
#: Any other string value is cut to this many characters.
MAX_VALUE_CHARS = 1024
#: A structured (dict/list) extra larger than this, serialized, is replaced by a size note.
MAX_STRUCTURED_BYTES = 4096

#: Keys whose values are personal or secret data wherever they appear in a log record (at any
#: depth), unless the caller passes its own set (``get_logger(sensitive_keys=...)``).
DEFAULT_SENSITIVE_KEYS = frozenset(
    {
        "password",
        "secret",
        "token",
        "card_number",
        "cvc",
        "address",
        "name",
        "email",
        "phone",
    }
)
#: Keys Powertools itself writes: never masked or dropped.
_CORE_KEYS = ("level", "location", "message", "timestamp", "service", "correlation_id", "trace_id", "exception_name")
#: Log key of the W3C trace ID (32 hex digits) of the span in scope: with ``correlation_id``, on
#: every line written inside a record's or a step's scope (lambda_resilience.tracing).
TRACE_ID = "trace_id"
_MAX_WALK_DEPTH = 12


def _truncated(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}...[truncated {len(text) - limit} chars]"


def _truncated_traceback(text: str) -> str:
    if len(text) <= MAX_EXCEPTION_HEAD_CHARS + MAX_EXCEPTION_TAIL_CHARS:
        return text
    cut = len(text) - MAX_EXCEPTION_HEAD_CHARS - MAX_EXCEPTION_TAIL_CHARS
    return f"{text[:MAX_EXCEPTION_HEAD_CHARS]}\n...[truncated {cut} chars]...\n{text[-MAX_EXCEPTION_TAIL_CHARS:]}"


def _has_sensitive(value: Any, keys: frozenset[str], depth: int = 0) -> bool:
    if depth > _MAX_WALK_DEPTH:
        return False
    if isinstance(value, Mapping):
        return any(k in keys or _has_sensitive(v, keys, depth + 1) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_has_sensitive(v, keys, depth + 1) for v in value)
    return False


def _masked(value: Any, erase: Any, keys: frozenset[str], depth: int = 0) -> Any:
    if depth > _MAX_WALK_DEPTH:
        return "[omitted: nested too deep]"
    if isinstance(value, Mapping):
        return {k: erase(v) if k in keys else _masked(v, erase, keys, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_masked(v, erase, keys, depth + 1) for v in value]
    return value


def mask_sensitive(log: dict[str, Any], keys: frozenset[str] = DEFAULT_SENSITIVE_KEYS) -> dict[str, Any]:
    """``log`` with every value under one of ``keys`` erased (Powertools data masking)."""
    if not _has_sensitive(log, keys):
        return log
    from aws_lambda_powertools.utilities.data_masking import DataMasking

    masking = DataMasking()
    return dict(_masked(log, masking.erase, keys))


def bound(log: dict[str, Any]) -> dict[str, Any]:
    """``log`` with its message, traceback and extras cut so that the line stays under the limit."""
    out: dict[str, Any] = {}
    for key, value in log.items():
        if key == "message" and isinstance(value, str):
            out[key] = _truncated(value, MAX_MESSAGE_CHARS)
        elif key in ("exception", "stack_trace") and isinstance(value, str):
            out[key] = _truncated_traceback(value)
        elif isinstance(value, str):
            out[key] = _truncated(value, MAX_VALUE_CHARS)
        elif isinstance(value, (dict, list, tuple)):
            size = len(json.dumps(value, default=str))
            out[key] = value if size <= MAX_STRUCTURED_BYTES else f"[omitted: {size} bytes]"
        else:
            out[key] = value
    return out


class SafeLogFormatter(LambdaPowertoolsFormatter):
    """Powertools' JSON formatter; every line masked (values under ``sensitive_keys``) and bounded (16 KB)."""

    def __init__(self, *, sensitive_keys: Iterable[str] = DEFAULT_SENSITIVE_KEYS, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sensitive_keys = frozenset(sensitive_keys)

    def serialize(self, log: dict[str, Any]) -> str:  # type: ignore[override]
        trace_id = current_trace_id()  # formatted in the logging thread: its context is the caller's
        if trace_id and TRACE_ID not in log:
            log = {**log, TRACE_ID: trace_id}
        safe = bound(mask_sensitive(log, self.sensitive_keys))
        line = super().serialize(safe)
        if len(line.encode("utf-8")) <= MAX_LINE_BYTES:
            return line
        # Still too long (many large extras, or multi-byte text): keep the core keys, cut harder,
        # and say what was dropped. 1,536 characters escape to at most ~9 KB of JSON.
        core = {k: safe[k] for k in _CORE_KEYS if k in safe}
        core["message"] = _truncated(str(safe.get("message", "")), 512)
        if safe.get("exception"):
            core["exception"] = "..." + str(safe["exception"])[-1024:]
        core["dropped_keys"] = sorted(k for k in safe if k not in core)[:50]
        return super().serialize(core)


def get_logger(*, sensitive_keys: Iterable[str] = DEFAULT_SENSITIVE_KEYS, **kwargs: Any) -> Logger:
    """A Powertools Logger whose lines go through :class:`SafeLogFormatter` (``kwargs``: Logger's)."""
    return Logger(logger_formatter=SafeLogFormatter(sensitive_keys=sensitive_keys), **kwargs)
