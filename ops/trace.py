"""``ops trace <correlation-id>``: one order's timeline from logs, executions and DLQs, in time order."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ops.dlq import QUEUES, failures_table, lambda_dlq_module
from ops.repair import order_executions
from ops.target import Target, TargetError


@dataclass(frozen=True)
class TraceEvent:
    timestamp: float
    source: str
    text: str

    def line(self) -> str:
        when = datetime.fromtimestamp(self.timestamp).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        return f"{when}  {self.source:<28} {self.text}"


def _log_events(target: Target, correlation_id: str) -> tuple[list[TraceEvent], set[str]]:
    events: list[TraceEvent] = []
    order_ids: set[str] = set()
    logs = target.client("logs")
    for group in target.output("LogGroupNames").split(","):
        try:
            pages = logs.get_paginator("filter_log_events").paginate(
                logGroupName=group, filterPattern=f'"{correlation_id}"'
            )
            found = [e for p in pages for e in p.get("events", [])]
        except logs.exceptions.ResourceNotFoundException:
            continue
        for event in found:
            try:
                line = json.loads(event["message"])
            except json.JSONDecodeError:
                line = {"message": event["message"]}
            if line.get("correlation_id") not in (None, correlation_id):
                continue
            if line.get("order_id"):
                order_ids.add(str(line["order_id"]))
            detail = {k: line[k] for k in ("order_id", "error_type", "category", "status") if k in line}
            text = f"{line.get('level', '')} {line.get('message', '')} {json.dumps(detail) if detail else ''}".strip()
            events.append(TraceEvent(event["timestamp"] / 1000, f"log:{line.get('service', group)}", text))
    return events, order_ids


def _execution_events(target: Target, order_ids: set[str]) -> list[TraceEvent]:
    sfn = target.client("stepfunctions")
    events = []
    for order_id in sorted(order_ids):
        for execution in order_executions(target, order_id):
            pages = sfn.get_paginator("get_execution_history").paginate(executionArn=execution["executionArn"])
            for page in pages:
                for h in page["events"]:
                    name = (h.get("stateEnteredEventDetails") or {}).get("name") or (
                        h.get("stateExitedEventDetails") or {}
                    ).get("name")
                    failed = h.get("lambdaFunctionFailedEventDetails") or h.get("executionFailedEventDetails") or {}
                    text = (
                        h["type"] + (f" {name}" if name else "") + (f" error={failed.get('error')}" if failed else "")
                    )
                    events.append(TraceEvent(h["timestamp"].timestamp(), f"execution:{execution['name']}", text))
    return events


def _dlq_events(target: Target, correlation_id: str) -> list[TraceEvent]:
    dlq = lambda_dlq_module()
    events = []
    for name, (_, dlq_output) in QUEUES.items():
        try:
            url = target.output(dlq_output)
        except TargetError:
            continue
        for message in dlq.peek(target.client, url, failures_table(target)):
            if message.correlation_id == correlation_id:
                text = f"{message.category} {message.error_type or ''}: {message.error_message or ''}".strip()
                events.append(TraceEvent(message.sent_timestamp, f"dlq:{name}", text))
    return events


def trace(target: Target, correlation_id: str) -> list[TraceEvent]:
    """Every log line, execution history event and DLQ record for ``correlation_id``, in time order."""
    if not correlation_id.strip():
        raise ValueError("a correlation ID is required")
    events, order_ids = _log_events(target, correlation_id)
    events += _execution_events(target, order_ids)
    events += _dlq_events(target, correlation_id)
    return sorted(events, key=lambda e: e.timestamp)


def as_json(events: list[TraceEvent]) -> list[dict[str, Any]]:
    return [{"timestamp": e.timestamp, "source": e.source, "text": e.text} for e in events]
