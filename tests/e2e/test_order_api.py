"""The order API end to end: the synthesized template's REST API served locally (local_cloud.apigateway)
in front of the deployed pipeline, called as a client would (SigV4, Idempotency-Key)."""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.run.run import RunOptions, synthesize
from harness.stack.pipeline import PipelineRun, local_pipeline
from harness.workload.api_client import idempotency_key
from harness.workload.orders import make_order
from lambda_resilience.testing import in_memory_tracing
from local_cloud.clients import aws
from local_cloud.otel_layer import LAYER_SCOPE
from tests.e2e.trace_tree import PARENT_ID, TRACE_ID, TRACEPARENT, order_trace

pytestmark = pytest.mark.e2e

CUSTOMER_FIELDS = ("payment_token", "shipping_address", "name", "line1", "postcode")


#: AWS's OpenTelemetry layer on every function, as prod deploys it (a well-formed version ARN: the local run
#: fetches no layer; the emulator plays the layer's invocation span, local_cloud.otel_layer).
OTEL_LAYER = "arn:aws:lambda:us-east-1:901920570463:layer:AWSOpenTelemetryDistroPython:18"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PipelineRun]:
    assembly = synthesize(Path(tmp_path_factory.mktemp("cdk.out")), "dev", {"otel_layer_arn": OTEL_LAYER})
    with local_pipeline(RunOptions(orders=1, via="api", assembly_dir=assembly.outdir), assembly) as pipeline:
        yield pipeline


def test_order_api_accepted_order_completes_and_get_shows_no_customer_data(run: PipelineRun) -> None:
    assert run.producer.api is not None
    order = make_order("order-api-1", random.Random(1))
    body = json.dumps(order)
    accepted = run.producer.api.post_order(body, "cid-api-1")
    assert accepted.status == 202, accepted.body
    assert accepted.headers["X-Correlation-Id"] == "cid-api-1"
    run.drain()
    answer = run.producer.api.get_order("order-api-1")
    assert answer.status == 200, answer.body
    view = json.loads(answer.body)
    assert view["status"] == "COMPLETED"
    for field in CUSTOMER_FIELDS:
        assert field not in answer.body
    assert order["payment_token"] not in answer.body
    assert order["shipping_address"]["name"] not in answer.body


def test_order_api_same_key_and_body_twice_makes_one_order(run: PipelineRun) -> None:
    assert run.producer.api is not None
    order = make_order("order-api-2", random.Random(2))
    body = json.dumps(order)
    first = run.producer.api.post_order(body, "cid-api-2", idempotency_key(body))
    second = run.producer.api.post_order(body, "cid-api-2", idempotency_key(body))
    assert (first.status, second.status) == (202, 202)
    run.drain()
    view = json.loads(run.producer.api.get_order("order-api-2").body)
    assert view["status"] == "COMPLETED"
    assert len(view["attempts"]) == 1
    statuses = [h["status"] for h in view["history"]]
    assert statuses.count("COMPLETED") == 1


def test_order_api_body_without_currency_is_400_naming_it_and_enqueues_nothing(run: PipelineRun) -> None:
    assert run.producer.api is not None
    order = make_order("order-api-3", random.Random(3))
    del order["currency"]
    answer = run.producer.api.post_order(json.dumps(order), "cid-api-3")
    assert answer.status == 400
    assert "currency" in json.loads(answer.body)["detail"]
    run.drain()
    assert run.producer.api.get_order("order-api-3").status == 404


def test_order_api_access_log_lines_hold_no_customer_data(run: PipelineRun) -> None:
    import boto3

    from local_cloud.apigateway.model import rest_apis
    from local_cloud.template import REGION

    assert run.producer.api is not None
    order = make_order("order-api-4", random.Random(4))
    assert run.producer.api.post_order(json.dumps(order), "cid-api-4").status == 202
    (api,) = rest_apis(run.deployment)
    (stage,) = api.stages.values()
    assert stage.access_log_group
    events = boto3.client("logs", region_name=REGION).filter_log_events(logGroupName=stage.access_log_group)
    lines = [e["message"] for e in events["events"]]
    assert any("cid-api-4" in line for line in lines)
    text = "\n".join(lines)
    for value in (order["payment_token"], order["shipping_address"]["name"], order["shipping_address"]["line1"]):
        assert value not in text


def _execution(run: PipelineRun, order_id: str) -> dict[str, Any]:
    """DescribeExecution of the order's (only) execution."""
    sfn = aws("stepfunctions")
    executions = sfn.list_executions(stateMachineArn=run.state_machine_arn)["executions"]
    described = [sfn.describe_execution(executionArn=e["executionArn"]) for e in executions]
    (mine,) = [d for d in described if json.loads(d["input"]).get("order_id") == order_id]
    return dict(mine)


def _xray_root(last_hex: str) -> str:
    """An X-Ray trace ID whose last two hex digits (the edge's sampling bucket, 0-255) are ``last_hex``."""
    return f"1-{int(time.time()):08x}-{uuid.uuid4().hex[:22]}{last_hex}"


@pytest.mark.parametrize("caller_traceparent", [True, False], ids=["caller-traceparent", "seeded-from-xray"])
def test_order_api_one_order_is_one_trace_from_the_api_to_the_last_step(
    run: PipelineRun, caller_traceparent: bool
) -> None:
    """The trace starts at the API: the caller's ``traceparent``, or the stage's X-Ray trace (tracing is
    on: its Root is the W3C trace ID, the API's segment the parent of intake's span); the execution joins
    it (``traceHeader``), so each task function's layer invocation span (parented on Lambda's X-Ray header)
    is intake's child and our handler span the layer's (decision 0019; ShipOrder, the last state, writes the
    outcome itself: decision 0024). The X-Ray Root is the caller's (API Gateway continues it), chosen in the edge's
    sampled bucket at the default rate."""
    assert run.producer.api is not None
    order = make_order(f"order-api-traced-{caller_traceparent}", random.Random(3))
    headers = {"Idempotency-Key": f"{order['order_id']}:1", "X-Amzn-Trace-Id": f"Root={_xray_root('00')}"}
    if caller_traceparent:
        headers["traceparent"] = TRACEPARENT
    run.drain()  # earlier tests' orders first: only this order's spans below
    with in_memory_tracing() as exporter:
        accepted = run.producer.api.request("POST", "/orders", json.dumps(order).encode(), headers)
        assert accepted.status == 202, accepted.body
        run.drain()
        if caller_traceparent:
            trace_id, root_parent = TRACE_ID, PARENT_ID
        else:  # the stage's X-Ray trace, as the API answered it
            xray = dict(part.split("=", 1) for part in str(accepted.header("X-Amzn-Trace-Id")).split(";"))
            assert xray["Root"] == headers["X-Amzn-Trace-Id"][5:]
            trace_id, root_parent = xray["Root"][2:].replace("-", ""), xray["Parent"]
        trace = order_trace(exporter, trace_id)
        others = [(s.name, dict(s.attributes or {})) for s in exporter.get_finished_spans() if s not in trace.spans]
    assert not others, f"spans in other traces: {others}"
    (intake,) = trace.named("record")
    by_id = {trace.span_id(s): s for s in trace.spans}
    intake_handler = by_id[str(trace.parent_id(intake))]
    assert intake_handler.name.endswith(" handler") and trace.parent_id(intake_handler) == root_parent
    # Intake's own Lambda trace (SQS starts none: a new one, not sampled) is linked, not parented.
    assert len(intake_handler.links) == 1
    for step in ("reserve-inventory", "charge-payment", "ship-order"):
        (span,) = trace.named(step)
        handler = by_id[str(trace.parent_id(span))]  # our handler span
        layer = by_id[str(trace.parent_id(handler))]  # the layer's invocation span, on Lambda's X-Ray header
        assert handler.name.endswith(" handler") and layer.instrumentation_scope.name == LAYER_SCOPE, step
        assert trace.parent_id(layer) == trace.span_id(intake), step  # the execution's trace (traceHeader)
    trace.assert_connected(root_parent)
    # The execution joined the order's trace (StartExecution's traceHeader, intake's record span its parent):
    # Step Functions' segments and the Lambda header of every task, so the layer's invocation spans, are in it.
    assert _execution(run, order["order_id"])["traceHeader"] == (
        f"Root=1-{trace_id[:8]}-{trace_id[8:]};Parent={trace.span_id(intake)};Sampled=1"
    )
    view = json.loads(run.producer.api.get_order(order["order_id"]).body)
    assert view["status"] == "COMPLETED"
    dumped = repr([dict(s.attributes or {}) for s in trace.spans])
    for secret in (order["payment_token"], order["shipping_address"]["name"], order["shipping_address"]["line1"]):
        assert secret not in dumped


def test_order_api_sampled_out_at_the_edge_stays_sampled_out_to_the_last_step(run: PipelineRun) -> None:
    """The edge decides once: an X-Ray trace outside the default rate's bucket is minted with flag 00;
    no span of ours is recorded anywhere downstream, and the saga's input carries the same trace, 00."""
    assert run.producer.api is not None
    order = make_order("order-api-sampled-out", random.Random(6))
    root = _xray_root("ff")
    headers = {"Idempotency-Key": f"{order['order_id']}:1", "X-Amzn-Trace-Id": f"Root={root}"}
    run.drain()  # earlier tests' orders first: only this order's spans below
    with in_memory_tracing() as exporter:
        accepted = run.producer.api.request("POST", "/orders", json.dumps(order).encode(), headers)
        assert accepted.status == 202, accepted.body
        run.drain()
        recorded = [s.name for s in exporter.get_finished_spans()]
    assert recorded == []
    execution = _execution(run, order["order_id"])
    mine = json.loads(execution["input"])
    assert mine["traceparent"].startswith(f"00-{root[2:].replace('-', '')}-")
    assert mine["traceparent"].endswith("-00")
    assert execution["traceHeader"].startswith(f"Root={root};") and execution["traceHeader"].endswith(";Sampled=0")
    assert json.loads(run.producer.api.get_order(order["order_id"]).body)["status"] == "COMPLETED"


def test_order_api_body_over_the_queue_limit_is_413_and_nothing_enqueued(run: PipelineRun) -> None:
    """A valid order padded with whitespace past the orders queue's MaximumMessageSize (but far under
    API Gateway's 10 MB): the model accepts it, the request template refuses it (over the contract's
    64 KiB) before SQS would, and answers 413."""
    assert run.producer.api is not None
    order = make_order("order-api-oversize", random.Random(5))
    body = json.dumps(order) + " " * 70_000  # trailing whitespace only: the same JSON, over 70 KB
    assert len(body.encode()) > 69_632
    answer = run.producer.api.request("POST", "/orders", body.encode(), {"Idempotency-Key": "k-oversize"})
    assert answer.status == 413, answer.body
    assert "65536" in answer.body
    run.drain()
    assert run.producer.api.get_order("order-api-oversize").status == 404
