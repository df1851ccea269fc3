"""``ops trace <correlation-id>``: one order's timeline from logs, executions and DLQs, in time order."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from lambda_resilience.log_queries import trace_query
from ops.dlq import QUEUES, peek
from ops.errors import UsageError
from ops.log_query import query_groups
from ops.order_view import executions_by_name
from ops.target import Target, TargetError


@dataclass(frozen=True)
class TraceEvent:
    timestamp: float
    source: str
    text: str

    def line(self) -> str:
        when = datetime.fromtimestamp(self.timestamp).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        return f"{when}  {self.source:<28} {self.text}"


#: Characters a CloudWatch Logs quoted filter term holds literally, and that JSON log lines keep verbatim.
_FILTER_SAFE = re.compile(r"[A-Za-z0-9_.:@+=/-]+")
#: A shorter safe run would match too much to be worth sending as a filter.
_MIN_FILTER_TERM = 4


def filter_term(correlation_id: str) -> str | None:
    """A server-side filter pattern that matches every log line carrying ``correlation_id``, or None.

    The ID itself when it is made of safe characters; otherwise its longest safe run (quotes,
    spaces, backslashes and non-ASCII cannot be quoted reliably in the pattern syntax, and
    appear escaped in the JSON line). None: no server-side filter, read the groups whole.
    The result is a superset: :func:`_log_events` keeps only exact matches.
    """
    runs = _FILTER_SAFE.findall(correlation_id)
    longest = max(runs, key=len, default="")
    return f'"{longest}"' if len(longest) >= _MIN_FILTER_TERM else None


#: How much of an out-of-bounds producer ID the runtime keeps, escaped
#: (lambda_resilience.correlation.MAX_PRODUCER_VALUE_KEPT).
_PRODUCER_KEPT = 256


def producer_forms(correlation_id: str) -> set[str]:
    """How a producer's out-of-bounds ID appears under ``producer_correlation_id``: as sent, or
    escaped and cut as intake keeps it."""
    kept = correlation_id[:_PRODUCER_KEPT].encode("unicode_escape").decode("ascii")[:_PRODUCER_KEPT]
    return {correlation_id, kept}


def _matches(line: dict[str, Any], raw: str, correlation_id: str) -> bool:
    """Exact match on the parsed ``correlation_id``; a line without one matches if it names the ID."""
    if "correlation_id" in line:
        return line["correlation_id"] == correlation_id
    return correlation_id in raw or json.dumps(correlation_id)[1:-1] in raw


#: What an order ID must look like to name executions (``order-<id>-attempt-<N>``: 1-80 of [A-Za-z0-9_-]).
EXECUTION_NAME_PART = re.compile(r"[A-Za-z0-9_-]{1,48}")
#: How far back ``ops trace`` reads logs unless told (``--since``).
DEFAULT_SINCE_SECONDS = 24 * 3600


def _timestamp_seconds(value: str) -> float:
    """A row's ``@timestamp``: Logs Insights' ``2026-11-27 10:00:00.000`` (UTC), or epoch milliseconds."""
    if value.isdigit():
        return int(value) / 1000
    return datetime.strptime(value, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC).timestamp()


def _log_events(
    target: Target, key: str, seen: set[str], since_seconds: float
) -> tuple[list[TraceEvent], set[str], set[str]]:
    """(events, order IDs seen, IDs minted for it: lines whose ``producer_correlation_id`` is this ID), from
    one Logs Insights query over every function's log group in the last ``since_seconds``.

    A line matches on its parsed ``correlation_id`` or ``order_id`` (``key`` may be either).
    ``seen``: the rows' ``@ptr`` already reported (updated), so no line is reported twice.
    """
    events: list[TraceEvent] = []
    order_ids: set[str] = set()
    minted: set[str] = set()
    as_producer = producer_forms(key)
    groups = [g for g in target.output("LogGroupNames").split(",") if g]
    rows = query_groups(target.client("logs"), groups, trace_query(filter_term(key)), since_seconds)
    for row in rows:
        message, ptr = row.get("@message", ""), row.get("@ptr", "")
        if ptr and ptr in seen:
            continue
        try:
            parsed = json.loads(message)
        except (ValueError, RecursionError):
            parsed = None
        line = parsed if isinstance(parsed, dict) else {"message": message}
        if line.get("producer_correlation_id") in as_producer and line.get("correlation_id"):
            minted.add(str(line["correlation_id"]))
        elif not (_matches(line, message, key) or line.get("order_id") == key):
            continue
        seen.add(ptr)
        if line.get("order_id"):
            order_ids.add(str(line["order_id"]))
        group = row.get("@log", "").rsplit(":", 1)[-1]
        detail = {k: line[k] for k in ("order_id", "error_type", "category", "status") if k in line}
        text = f"{line.get('level', '')} {line.get('message', '')} {json.dumps(detail) if detail else ''}".strip()
        when = _timestamp_seconds(row.get("@timestamp", "0"))
        events.append(TraceEvent(when, f"log:{line.get('service', group)}", text))
    return events, order_ids, minted - {key}


#: History events that carry an error (https://docs.aws.amazon.com/step-functions/latest/apireference/API_HistoryEvent.html):
#: a Task whose Resource is a function ARN fails as LambdaFunctionFailed/TimedOut; a service integration
#: (the saga's direct DynamoDB status writes, the last-resort SQS send) fails as TaskFailed/TimedOut.
FAILURE_DETAILS = (
    "lambdaFunctionFailedEventDetails",
    "lambdaFunctionTimedOutEventDetails",
    "taskFailedEventDetails",
    "taskTimedOutEventDetails",
    "executionFailedEventDetails",
    "executionTimedOutEventDetails",
    "executionAbortedEventDetails",
)


def failure_details(event: dict[str, Any]) -> dict[str, Any]:
    """The error details of a history event (``error``, ``cause``), or {} if it records none."""
    return next((dict(event[key]) for key in FAILURE_DETAILS if event.get(key)), {})


def _execution_events(target: Target, order_ids: set[str]) -> list[TraceEvent]:
    """Each order's executions found by their deterministic names (DescribeExecution), then their histories."""
    try:
        target.output("StateMachineArn")
    except TargetError:
        return []
    sfn = target.client("stepfunctions")
    events = []
    for order_id in sorted(order_ids):
        for execution in executions_by_name(target, order_id):
            pages = sfn.get_paginator("get_execution_history").paginate(executionArn=execution["arn"])
            for page in pages:
                for h in page["events"]:
                    name = (h.get("stateEnteredEventDetails") or {}).get("name") or (
                        h.get("stateExitedEventDetails") or {}
                    ).get("name")
                    failed = failure_details(h)
                    text = (
                        h["type"] + (f" {name}" if name else "") + (f" error={failed.get('error')}" if failed else "")
                    )
                    events.append(TraceEvent(h["timestamp"].timestamp(), f"execution:{execution['name']}", text))
    return events


def _dlq_events(target: Target, correlation_ids: set[str]) -> list[TraceEvent]:
    events = []
    for name, (_, dlq_output) in QUEUES.items():
        try:
            url = target.output(dlq_output)
        except TargetError:
            continue
        for message in peek(target, url):
            if message.correlation_id in correlation_ids:
                text = f"{message.category} {message.error_type or ''}: {message.error_message or ''}".strip()
                events.append(TraceEvent(message.sent_timestamp, f"dlq:{name}", text))
    return events


def trace(target: Target, correlation_id: str, *, since_seconds: float = DEFAULT_SINCE_SECONDS) -> list[TraceEvent]:
    """Every log line (of the last ``since_seconds``), execution history event and DLQ record for
    ``correlation_id`` (or an order ID), in time order.

    The ID is matched verbatim (quotes, spaces and all). A producer ID that intake replaced
    (out of bounds) is followed to the minted one through ``producer_correlation_id``. An order ID
    finds the order's lines and its executions by their names.
    """
    if not correlation_id.strip():
        raise UsageError("a correlation ID is required")
    seen: set[str] = set()
    events, order_ids, minted = _log_events(target, correlation_id, seen, since_seconds)
    if EXECUTION_NAME_PART.fullmatch(correlation_id):
        order_ids.add(correlation_id)  # an order ID, perhaps: its executions are found by name
    for alias in sorted(minted):  # the producer's ID was out of bounds: intake minted this one for it
        more, more_orders, _ = _log_events(target, alias, seen, since_seconds)
        events += more
        order_ids |= more_orders
    events += _execution_events(target, order_ids)
    events += _dlq_events(target, {correlation_id, *minted})
    return sorted(events, key=lambda e: e.timestamp)


def as_json(events: list[TraceEvent]) -> list[dict[str, Any]]:
    return [{"timestamp": e.timestamp, "source": e.source, "text": e.text} for e in events]
