"""Shared boto3 clients (one per service per process) and DynamoDB item helpers.

:func:`client` is for composition roots only (the app's is ``order_domain.wiring``): they build
each client once per execution environment and hand it to the repositories and services, which
take a client in their constructor and never look one up. A client is created on the first
request for it, not at import, so importing this module stays close to ``import boto3`` alone.
Every client comes from one boto3 session per process: a session loads and parses botocore's service
data (endpoints, partitions, each service's model) for itself, so a session per client repeats that for
every client of a cold start (measured, CPU: about 260 ms per client from a new session; from one session,
190 ms for the first, 20 to 40 ms for each other service's). A session is not thread-safe, so clients
are created under a lock (https://boto3.amazonaws.com/v1/documentation/api/latest/guide/session.html#multithreading-or-multiprocessing-with-sessions);
a client is.
"""

from __future__ import annotations

import threading
from decimal import Decimal
from typing import Any

import boto3
from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

_lock = threading.Lock()
_clients: dict[str, Any] = {}
_session: list[boto3.session.Session] = []  # the process's session, once created
_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def client(service: str) -> Any:
    """The process-wide client for ``service`` (created once): for composition roots."""
    existing = _clients.get(service)
    if existing is not None:
        return existing
    with _lock:
        if service not in _clients:
            if not _session:
                _session.append(boto3.session.Session())
            _clients[service] = _session[0].client(service)
        return _clients[service]


def reset_clients(*, session: bool = False) -> None:
    """Forget cached clients: the next ones read the region and endpoint of the environment again.

    ``session=True`` also forgets the session, and with it the credentials it resolved (a change of keys).
    """
    with _lock:
        _clients.clear()
        if session:
            _session.clear()


def to_item(data: dict[str, Any]) -> dict[str, Any]:
    """Python dict -> DynamoDB attribute-value map."""
    return {k: _serializer.serialize(v) for k, v in data.items() if v is not None}


def from_item(item: dict[str, Any]) -> dict[str, Any]:
    """DynamoDB attribute-value map -> Python dict (numbers become int where integral)."""
    out: dict[str, Any] = {}
    for key, value in item.items():
        out[key] = _plain(_deserializer.deserialize(value))
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def error_code(exc: Exception) -> str:
    """The AWS error code of a botocore ClientError ('' otherwise)."""
    response = getattr(exc, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


def cancelled_only_by_conditions(exc: Exception) -> bool:
    """For a TransactionCanceledException: True if every reason is a failed condition.

    Any other reason (throttling, a conflicting transaction, capacity) means "try again",
    never "the condition says it was already done".
    """
    response = getattr(exc, "response", None) or {}
    reasons = response.get("CancellationReasons") or []
    codes = {str(r.get("Code")) for r in reasons if r.get("Code") not in (None, "None")}
    return not codes or codes == {"ConditionalCheckFailed"}
