"""Correlation IDs: minted at the entry point, carried in SQS attributes, saga input and logs.

Why hand-written: Powertools Logger can set *one* correlation ID per invocation from a JMESPath
path, but an SQS batch holds records of different orders; each record's log lines must carry
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

#: Name of the SQS message attribute, the saga input field and the log key.
CORRELATION_ID = "correlation_id"

_current: ContextVar[str | None] = ContextVar("correlation_id", default=None)


def new_correlation_id() -> str:
    """Mint a fresh correlation ID (UUID4)."""
    return str(uuid.uuid4())


def current_correlation_id() -> str | None:
    """The correlation ID of the record or invocation being processed, if any."""
    return _current.get()


def from_sqs_record(record: Mapping[str, Any]) -> str | None:
    """Read the correlation ID from an SQS record's message attributes (Lambda event shape)."""
    attributes = record.get("messageAttributes") or {}
    attribute = attributes.get(CORRELATION_ID) or {}
    value = attribute.get("stringValue") or attribute.get("StringValue")
    return str(value) if value else None


def from_payload(payload: Mapping[str, Any]) -> str | None:
    """Read the correlation ID from a saga input or a provider request."""
    value = payload.get(CORRELATION_ID) if isinstance(payload, Mapping) else None
    return str(value) if value else None


def sqs_message_attributes(correlation_id: str | None = None) -> dict[str, dict[str, str]]:
    """Message attributes to attach to an outgoing SQS message (defaults to the current ID)."""
    cid = correlation_id or current_correlation_id()
    if not cid:
        raise ValueError("no correlation ID in scope for an outgoing message")
    return {CORRELATION_ID: {"DataType": "String", "StringValue": cid}}


@contextmanager
def correlation_scope(logger: Logger, correlation_id: str | None) -> Iterator[str]:
    """Put ``correlation_id`` (minted when missing) on every log line of this thread until exit."""
    cid = correlation_id or new_correlation_id()
    previous = _current.get()
    token = _current.set(cid)
    logger.thread_safe_append_keys(correlation_id=cid)
    try:
        yield cid
    finally:
        # Powertools keeps thread-safe keys per thread, not per logger: restore an enclosing
        # scope's ID (a nested in-process call) instead of removing the key outright.
        if previous:
            logger.thread_safe_append_keys(correlation_id=previous)
        else:
            logger.thread_safe_remove_keys([CORRELATION_ID])
        _current.reset(token)
