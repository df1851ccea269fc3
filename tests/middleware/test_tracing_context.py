"""OpenTelemetry in the middleware: a record's span continues the producer's ``traceparent``, log
lines carry the trace and correlation IDs, outgoing SQS messages and DLQ copies carry the context,
spans hold no customer data, and tracing off imports nothing."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import uuid
from typing import Any, cast

import pytest
from aws_lambda_powertools.utilities.typing import LambdaContext

from lambda_resilience.batch import process_sqs_batch
from lambda_resilience.correlation import sqs_message_attributes
from lambda_resilience.dlq import MAX_DLQ_COPY_ATTRIBUTES, REPLAY_COUNT, FailureRouting
from lambda_resilience.exceptions import PermanentError
from lambda_resilience.logs import get_logger
from lambda_resilience.testing import FakeLambdaContext, LogLines, in_memory_tracing
from lambda_resilience.tracing import (
    TRACEPARENT,
    current_traceparent,
    is_traceparent,
    record_span,
    step_span,
    traced,
    tracing_enabled,
    xray_trace_header,
)

_CONTEXT = cast(LambdaContext, FakeLambdaContext())
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
GIVEN = f"00-{TRACE_ID}-{PARENT_ID}-01"


def _record(body: str = "{}", **attributes: str) -> dict[str, Any]:
    return {
        "messageId": str(uuid.uuid4()),
        "receiptHandle": "r",
        "body": body,
        "attributes": {"ApproximateReceiveCount": "1", "ApproximateFirstReceiveTimestamp": "1700000000000"},
        "messageAttributes": {
            name: {"stringValue": value, "dataType": "String", "stringListValues": [], "binaryListValues": []}
            for name, value in attributes.items()
        },
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:orders",
    }


def test_tracing_record_span_is_a_child_of_the_traceparent_attribute():
    logger = get_logger(service="t")
    seen: list[str | None] = []

    def handle(record: Any, cid: str) -> None:
        seen.append(current_traceparent())

    with in_memory_tracing() as spans:
        result = process_sqs_batch(
            {"Records": [_record(correlation_id="c-1", traceparent=GIVEN)]},
            _CONTEXT,
            handle,
            logger=logger,
        )
        (span,) = [s for s in spans.get_finished_spans() if s.name == "record"]

    assert result == {"batchItemFailures": []}
    assert f"{span.context.trace_id:032x}" == TRACE_ID
    assert span.parent is not None and f"{span.parent.span_id:016x}" == PARENT_ID
    assert span.attributes is not None and span.attributes["app.correlation_id"] == "c-1"
    # What the record handler carries further is the record span's own context.
    assert seen == [f"00-{TRACE_ID}-{span.context.span_id:016x}-01"]


def test_tracing_record_without_traceparent_starts_a_new_trace():
    with in_memory_tracing() as spans:
        process_sqs_batch(
            {"Records": [_record(correlation_id="c-2"), _record(correlation_id="c-3", traceparent="garbage")]},
            _CONTEXT,
            lambda record, cid: None,
            logger=get_logger(service="t"),
        )
        records = [s for s in spans.get_finished_spans() if s.name == "record"]

    assert len(records) == 2
    assert all(s.parent is None for s in records)
    assert len({s.context.trace_id for s in records}) == 2


def test_tracing_off_passes_the_traceparent_through_unchanged_and_mints_one_when_missing():
    assert not tracing_enabled()
    with record_span("record", GIVEN) as carried:
        assert carried == GIVEN == current_traceparent()
        with step_span("nested", None) as inner:  # no carrier: the one in scope continues
            assert inner == GIVEN
    with record_span("record", None) as minted:
        assert is_traceparent(minted) and minted != GIVEN
    assert current_traceparent() is None


def test_tracing_log_lines_carry_trace_id_and_correlation_id():
    def handle(record: Any, cid: str) -> None:
        logger.info("handled")

    for tracing_on in (False, True):
        stream = LogLines()
        logger = get_logger(service=f"t-{tracing_on}", logger_handler=logging.StreamHandler(stream))
        if tracing_on:
            with in_memory_tracing():
                process_sqs_batch(
                    {"Records": [_record(correlation_id="c-9", traceparent=GIVEN)]},
                    _CONTEXT,
                    handle,
                    logger=logger,
                )
        else:
            process_sqs_batch(
                {"Records": [_record(correlation_id="c-9", traceparent=GIVEN)]},
                _CONTEXT,
                handle,
                logger=logger,
            )
        (line,) = [x for x in stream.records()[0] if x["message"] == "handled"]
        assert line["correlation_id"] == "c-9"
        assert line["trace_id"] == TRACE_ID


def test_tracing_outgoing_sqs_attributes_carry_the_context_in_scope():
    with in_memory_tracing(), record_span("record", GIVEN) as own:
        attributes = sqs_message_attributes("c-5")
    assert attributes == {
        "correlation_id": {"DataType": "String", "StringValue": "c-5"},
        TRACEPARENT: {"DataType": "String", "StringValue": own},
    }
    assert own.split("-")[1] == TRACE_ID


class _Sqs:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send_message(self, **kwargs: Any) -> dict[str, str]:
        self.sent.append(kwargs)
        return {"MessageId": "m-1"}


def test_dlq_copy_keeps_traceparent_and_idempotency_key_within_the_ten_attribute_limit():
    sqs = _Sqs()
    routing = FailureRouting("https://dlq", None, lambda service: sqs)
    record = _record(correlation_id="c-7", traceparent=GIVEN, idempotency_key="k-1", **{REPLAY_COUNT: "2"})

    assert routing.handle(record, PermanentError("bad order"), "c-7")

    (sent,) = sqs.sent
    attributes = sent["MessageAttributes"]
    assert attributes[TRACEPARENT]["StringValue"] == GIVEN
    assert attributes["idempotency_key"]["StringValue"] == "k-1"
    assert attributes[REPLAY_COUNT]["StringValue"] == "2"
    # SQS's limit: https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html
    assert len(attributes) == MAX_DLQ_COPY_ATTRIBUTES == 10


def test_tracing_span_errors_name_the_type_and_never_the_message():
    secret = "tok_visa_SPAN_SECRET"

    @traced
    def handler(event: Any, context: Any) -> None:
        with step_span("step", GIVEN, correlation_id="c-8"):
            raise ValueError(f"bad token {secret}")

    with in_memory_tracing() as spans:
        with pytest.raises(ValueError):
            handler({}, FakeLambdaContext())
        finished = spans.get_finished_spans()

    assert {s.name for s in finished} == {"step", "test-function handler"}
    for span in finished:
        assert span.status.description == "ValueError"
        assert span.events == ()
        assert secret not in json.dumps(dict(span.attributes or {}))


def test_tracing_off_imports_no_opentelemetry():
    code = (
        "import sys\n"
        "from lambda_resilience.tracing import record_span, current_traceparent\n"
        "from lambda_resilience.logs import get_logger\n"
        "from lambda_resilience.correlation import sqs_message_attributes, correlation_scope\n"
        "log = get_logger(service='t')\n"
        "with correlation_scope(log, 'c'), record_span('r', None):\n"
        "    log.info('x'); sqs_message_attributes()\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    )
    env = {k: v for k, v in os.environ.items() if k != "LAMBDA_TASK_ROOT"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_tracing_is_on_in_lambda_unless_disabled():
    assert tracing_enabled({"LAMBDA_TASK_ROOT": "/var/task"})
    assert not tracing_enabled({})
    assert not tracing_enabled({"LAMBDA_TASK_ROOT": "/var/task", "OTEL_SDK_DISABLED": "true"})
    assert not tracing_enabled({"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "true"})


def _layer_invocation_span(trace_id: str) -> Any:
    """The layer's invocation span as its aws-lambda instrumentation makes it: parented on Lambda's own
    X-Ray trace header (here one whose Root is ``trace_id``)."""
    from opentelemetry import trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    xray = SpanContext(int(trace_id, 16), 0x53995C3F42CD8AD8, is_remote=True, trace_flags=TraceFlags(1))
    tracer = trace.get_tracer("opentelemetry.instrumentation.aws_lambda")
    return tracer.start_as_current_span("invocation", context=trace.set_span_in_context(NonRecordingSpan(xray)))


def test_tracing_step_span_joins_the_layers_invocation_span_when_lambdas_trace_is_the_orders():
    with in_memory_tracing() as spans:
        with _layer_invocation_span(TRACE_ID) as invocation, step_span("reserve-inventory", GIVEN):
            pass
        (step,) = [s for s in spans.get_finished_spans() if s.name == "reserve-inventory"]
    assert step.parent is not None and step.parent.span_id == invocation.get_span_context().span_id
    assert f"{step.context.trace_id:032x}" == TRACE_ID and list(step.links) == []


def test_tracing_step_span_follows_the_order_and_links_the_invocation_of_another_trace():
    with in_memory_tracing() as spans:
        with _layer_invocation_span("1" * 32) as invocation, step_span("reserve-inventory", GIVEN):
            pass
        (step,) = [s for s in spans.get_finished_spans() if s.name == "reserve-inventory"]
    assert step.parent is not None and f"{step.parent.span_id:016x}" == PARENT_ID
    assert [link.context.span_id for link in step.links] == [invocation.get_span_context().span_id]


def test_tracing_sampled_out_at_the_edge_stays_sampled_out_in_every_carrier():
    sampled_out = f"00-{TRACE_ID}-{PARENT_ID}-00"
    carried: list[str | None] = []

    @traced
    def handler(event: Any, context: Any) -> None:
        with step_span("reserve-inventory", event["traceparent"]):
            carried.append(current_traceparent())
            carried.append(sqs_message_attributes("c-1")[TRACEPARENT]["StringValue"])

    with in_memory_tracing() as spans:
        handler({"traceparent": sampled_out}, _CONTEXT)
        assert spans.get_finished_spans() == ()
    assert len(carried) == 2
    for value in carried:
        assert value is not None and value.startswith(f"00-{TRACE_ID}-") and value.endswith("-00")


def test_tracing_xray_trace_header_is_the_context_in_scope_in_xrays_format():
    """StartExecution's ``traceHeader``: Root from the W3C trace ID, Parent the span in scope, the flag kept."""
    assert xray_trace_header(None) is None and xray_trace_header("not-a-traceparent") is None
    assert xray_trace_header(f"00-{TRACE_ID}-{PARENT_ID}-00") == (
        f"Root=1-{TRACE_ID[:8]}-{TRACE_ID[8:]};Parent={PARENT_ID};Sampled=0"
    )
    with in_memory_tracing(), step_span("intake", GIVEN) as own:
        header = xray_trace_header(current_traceparent())
    assert header == f"Root=1-{TRACE_ID[:8]}-{TRACE_ID[8:]};Parent={own[36:52]};Sampled=1"
