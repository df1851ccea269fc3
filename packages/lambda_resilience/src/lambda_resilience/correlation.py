"""Correlation IDs: minted at the entry point, carried in SQS attributes, workflow input and logs.

Why hand-written: Powertools Logger can set *one* correlation ID per invocation from a JMESPath
path, but an SQS batch holds records of different requests; each record's log lines must carry
that record's own ID. This module scopes the ID per record (thread-safe, so records may run
concurrently) and reads/writes it where SQS and Step Functions carry it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from aws_lambda_powertools import Logger

#: Name of the SQS message attribute, the workflow input field and the log key.
CORRELATION_ID = "correlation_id"
#: Log key holding a producer's value that was outside the bounds below (a fresh ID was minted).
PRODUCER_CORRELATION_ID = "producer_correlation_id"
#: Accepted verbatim: 1..128 characters, all printable (``str.isprintable``: letters, digits,
#: punctuation, quotes and the ASCII space; no control, format or line-separator characters).
MAX_CORRELATION_ID_LENGTH = 128
#: How much of an out-of-bounds producer value is kept (escaped) in ``producer_correlation_id``.
MAX_PRODUCER_VALUE_KEPT = 256

_current: ContextVar[str | None] = ContextVar("correlation_id", default=None)


def new_correlation_id() -> str:
    """Mint a fresh correlation ID (UUID4)."""
    return str(uuid.uuid4())


def current_correlation_id() -> str | None:
    """The correlation ID of the record or invocation being processed, if any."""
    return _current.get()


def is_acceptable(value: object) -> bool:
    """True if ``value`` is a correlation ID we carry verbatim (see :data:`MAX_CORRELATION_ID_LENGTH`)."""
    return isinstance(value, str) and 0 < len(value) <= MAX_CORRELATION_ID_LENGTH and value.isprintable()


def from_sqs_record(record: Mapping[str, Any]) -> Any:
    """The raw correlation ID from an SQS record's message attributes (Lambda event shape), or None.

    Not validated here: :func:`correlation_scope` accepts it or mints a replacement.
    """
    attributes = record.get("messageAttributes") if isinstance(record, Mapping) else None
    attribute = attributes.get(CORRELATION_ID) if isinstance(attributes, Mapping) else None
    if not isinstance(attribute, Mapping):
        return None
    return attribute.get("stringValue") or attribute.get("StringValue")


def from_payload(payload: Any) -> Any:
    """The raw correlation ID from a workflow input or a request payload (any JSON value), or None."""
    return payload.get(CORRELATION_ID) if isinstance(payload, Mapping) else None


def sqs_message_attributes(correlation_id: str | None = None) -> dict[str, dict[str, str]]:
    """Message attributes to attach to an outgoing SQS message: the correlation ID (defaults to
    the current one) and the W3C ``traceparent`` of the span in scope, when there is one."""
    from lambda_resilience.tracing import sqs_attribute

    cid = correlation_id or current_correlation_id()
    if not cid:
        raise ValueError("no correlation ID in scope for an outgoing message")
    return {CORRELATION_ID: {"DataType": "String", "StringValue": cid}, **sqs_attribute()}


def _kept(value: object) -> str:
    """An out-of-bounds producer value, escaped and cut, safe to log."""
    text = value if isinstance(value, str) else repr(value)
    return text[:MAX_PRODUCER_VALUE_KEPT].encode("unicode_escape").decode("ascii")[:MAX_PRODUCER_VALUE_KEPT]


@contextmanager
def correlation_scope(logger: Logger, correlation_id: object) -> Iterator[str]:
    """Put the record's correlation ID on every log line of this thread until exit.

    A producer's value within bounds is used verbatim; a missing one is minted; one outside the
    bounds is replaced by a minted ID and kept, escaped, under ``producer_correlation_id``.
    """
    producer_value: str | None = None
    if is_acceptable(correlation_id):
        cid = str(correlation_id)
    else:
        cid = new_correlation_id()
        if correlation_id not in (None, ""):
            producer_value = _kept(correlation_id)
    previous = _current.get()
    token = _current.set(cid)
    logger.thread_safe_append_keys(correlation_id=cid)
    if producer_value is not None:
        logger.thread_safe_append_keys(**{PRODUCER_CORRELATION_ID: producer_value})
    try:
        yield cid
    finally:
        # Powertools keeps thread-safe keys per thread, not per logger: restore an enclosing
        # scope's ID (a nested in-process call) instead of removing the key outright.
        if producer_value is not None:
            logger.thread_safe_remove_keys([PRODUCER_CORRELATION_ID])
        if previous:
            logger.thread_safe_append_keys(correlation_id=previous)
        else:
            logger.thread_safe_remove_keys([CORRELATION_ID])
        _current.reset(token)
