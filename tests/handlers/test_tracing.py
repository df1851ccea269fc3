"""Tracing on OpenTelemetry, handler by handler (in-memory exporter, decision 0019): intake continues
the message's trace and hands it to the saga input; a step's span is a child of that input's
context; the provider requests carry it; the AWS SDK spans (the contrib botocore instrumentation)
hold no customer data."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest

from lambda_resilience.testing import in_memory_tracing
from lambda_resilience.tracing import record_span
from order_domain.https_providers import HttpsJsonClient
from order_domain.status import OrderStatus

from .conftest import REGION

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT_ID = "b7ad6b7169203331"
GIVEN = f"00-{TRACE_ID}-{PARENT_ID}-01"


def _parts(traceparent: str) -> tuple[str, str]:
    _, trace_id, parent_id, _ = traceparent.split("-")
    return trace_id, parent_id


def _execution_input(state_machine: str) -> dict[str, Any]:
    sfn = boto3.client("stepfunctions", region_name=REGION)
    (execution,) = sfn.list_executions(stateMachineArn=state_machine)["executions"]
    return dict(json.loads(sfn.describe_execution(executionArn=execution["executionArn"])["input"]))


@pytest.fixture
def spans() -> Iterator[Any]:
    with in_memory_tracing() as exporter:
        yield exporter


def test_tracing_intake_continues_the_trace_of_the_traceparent_attribute(
    load, order_factory, sqs_event, sqs_record, lambda_context, state_machine, spans
):
    intake = load("intake")
    order = order_factory()

    result = intake(sqs_event(sqs_record(order, correlation_id="cid-t", traceparent=GIVEN)), lambda_context)

    assert result == {"batchItemFailures": []}
    (record,) = [s for s in spans.get_finished_spans() if s.name == "record"]
    assert f"{record.context.trace_id:032x}" == TRACE_ID
    # One trace in the batch: the invocation's span is in it (a child of the producer's span), the
    # record's span a child of the invocation's, no link needed.
    (handler,) = [s for s in spans.get_finished_spans() if s.name.endswith(" handler")]
    assert handler.parent is not None and f"{handler.parent.span_id:016x}" == PARENT_ID
    assert record.parent is not None and record.parent.span_id == handler.context.span_id
    assert list(record.links) == []
    # The saga input carries the record span's context: the steps continue the same trace.
    started = _execution_input(state_machine)
    assert _parts(started["traceparent"]) == (TRACE_ID, f"{record.context.span_id:016x}")


def test_tracing_step_span_is_a_child_of_the_saga_input_context(
    load, order_factory, seed_order, saga_input, inventory, lambda_context, logs, spans
):
    reserve = load("reserve_inventory")
    inventory.seed(**{"SKU-A": 10, "SKU-B": 3})
    order = order_factory()
    seed_order(order, OrderStatus.RECEIVED)
    state = {**saga_input(order, "cid-step"), "traceparent": GIVEN}

    reserve(state, lambda_context)

    (step,) = [s for s in spans.get_finished_spans() if s.name == "reserve-inventory"]
    assert f"{step.context.trace_id:032x}" == TRACE_ID
    (handler,) = [s for s in spans.get_finished_spans() if s.name.endswith(" handler")]
    assert handler.parent is not None and f"{handler.parent.span_id:016x}" == PARENT_ID
    assert step.parent is not None and step.parent.span_id == handler.context.span_id
    assert step.attributes is not None and step.attributes["app.correlation_id"] == "cid-step"
    assert step.attributes["app.order_id"] == order["order_id"]
    lines = [line for line in logs.read() if line.get("correlation_id") == "cid-step"]
    assert lines and {line["trace_id"] for line in lines} == {TRACE_ID}


class _Recorder(BaseHTTPRequestHandler):
    headers_seen: list[dict[str, str]] = []

    def do_POST(self) -> None:
        type(self).headers_seen.append(dict(self.headers.items()))
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def recorder() -> Iterator[str]:
    _Recorder.headers_seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("tracing_on", [False, True])
def test_tracing_provider_request_carries_the_traceparent_header(recorder, tracing_on):
    client = HttpsJsonClient(recorder, lambda: "key", retries=0)

    if tracing_on:
        with in_memory_tracing(), record_span("step", GIVEN) as own:
            client.request("POST", "/charges", key="o-1#charge-payment#attempt-1", body={"amount_cents": 1})
    else:
        with record_span("step", GIVEN) as own:
            client.request("POST", "/charges", key="o-1#charge-payment#attempt-1", body={"amount_cents": 1})

    (headers,) = _Recorder.headers_seen
    sent = {k.lower(): v for k, v in headers.items()}["traceparent"]
    assert sent == own and _parts(sent)[0] == TRACE_ID


def test_tracing_aws_sdk_spans_hold_no_customer_data(
    load, order_factory, sqs_event, sqs_record, lambda_context, state_machine, spans
):
    from opentelemetry.instrumentation.botocore import BotocoreInstrumentor

    secrets = ("tok_visa_TRACE_SECRET", "Trace Person", "1 Trace St")
    order = order_factory(
        payment_token=secrets[0],
        shipping_address={"name": secrets[1], "line1": secrets[2], "city": "X", "postcode": "1", "country": "GB"},
    )
    instrumentor = BotocoreInstrumentor()
    instrumentor.instrument()
    try:
        intake = load("intake")
        result = intake(sqs_event(sqs_record(order, correlation_id="cid-sdk", traceparent=GIVEN)), lambda_context)
    finally:
        instrumentor.uninstrument()

    assert result == {"batchItemFailures": []}
    finished = spans.get_finished_spans()
    sdk = [s for s in finished if (s.attributes or {}).get("rpc.system") == "aws-api"]
    services = {(s.attributes or {}).get("rpc.service") for s in sdk}
    assert {"DynamoDB", "SFN"} <= services, services
    # Every AWS call of the record is in the order's trace.
    assert {f"{s.context.trace_id:032x}" for s in sdk} == {TRACE_ID}
    dumped = json.dumps(
        [
            {
                "name": s.name,
                "attributes": dict(s.attributes or {}),
                "events": [dict(e.attributes or {}) for e in s.events],
            }
            for s in finished
        ],
        default=str,
    )
    for secret in secrets:
        assert secret not in dumped
