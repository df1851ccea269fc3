"""One order's spans as a tree, for end-to-end tests on the local pipeline (decision 0019).

``send_traced_order`` sends an order as the order API does (``correlation_id``, ``idempotency_key``
and ``traceparent`` message attributes); :func:`order_trace` collects the finished spans of one
trace from :func:`lambda_resilience.testing.in_memory_tracing`'s exporter; :meth:`OrderTrace.assert_connected`
checks they form one tree under the producer's span. An API-driven test passes the ``traceparent``
the API put on the message (or the caller's) instead of sending here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from local_cloud.clients import aws

#: A producer's span context, as the API would put it on the message: trace ID and parent span ID.
TRACE_ID = "5b8aa5a2d2c872e8321cf37308d69df2"
PARENT_ID = "051581bf3cb55c13"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


def send_traced_order(
    queue_url: str,
    order: dict[str, Any],
    *,
    correlation_id: str,
    traceparent: str = TRACEPARENT,
    idempotency_key: str | None = None,
) -> None:
    """SendMessage of ``order`` with the attributes the order API sets (docs/contract.md)."""
    attributes = {
        "correlation_id": {"DataType": "String", "StringValue": correlation_id},
        "traceparent": {"DataType": "String", "StringValue": traceparent},
    }
    if idempotency_key is not None:
        attributes["idempotency_key"] = {"DataType": "String", "StringValue": idempotency_key}
    aws("sqs").send_message(QueueUrl=queue_url, MessageBody=json.dumps(order), MessageAttributes=attributes)


@dataclass(frozen=True)
class OrderTrace:
    """The finished spans of one trace (``opentelemetry.sdk.trace.ReadableSpan``)."""

    trace_id: str
    spans: Sequence[Any]

    def named(self, name: str) -> list[Any]:
        return [s for s in self.spans if s.name == name]

    def parent_id(self, span: Any) -> str | None:
        return f"{span.parent.span_id:016x}" if span.parent is not None else None

    def span_id(self, span: Any) -> str:
        return f"{span.context.span_id:016x}"

    def assert_connected(self, root_parent_id: str) -> None:
        """Every span's parent is ``root_parent_id`` (the producer's span, outside this process) or
        another span of the trace: one tree, nothing dangling."""
        ids = {self.span_id(s) for s in self.spans}
        dangling = [(s.name, self.parent_id(s)) for s in self.spans if self.parent_id(s) not in ids | {root_parent_id}]
        assert not dangling, f"spans whose parent is not in the trace: {dangling}"
        roots = [s.name for s in self.spans if self.parent_id(s) == root_parent_id]
        assert roots, f"no span of trace {self.trace_id} is a child of {root_parent_id}"


def order_trace(exporter: Any, trace_id: str = TRACE_ID) -> OrderTrace:
    """The finished spans of ``trace_id`` the in-memory exporter holds."""
    spans = [s for s in exporter.get_finished_spans() if f"{s.context.trace_id:032x}" == trace_id]
    return OrderTrace(trace_id=trace_id, spans=spans)
