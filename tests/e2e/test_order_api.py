"""The order API end to end: the synthesized template's REST API served locally (local_cloud.apigateway)
in front of the deployed pipeline, called as a client would (SigV4, Idempotency-Key)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

import pytest

from lambda_resilience.testing import in_memory_tracing
from local_cloud.template import CloudAssembly
from ops.local.api_client import idempotency_key
from ops.local.orders import make_order
from ops.local.pipeline import PipelineRun, local_pipeline
from ops.local.run import RunOptions
from tests.e2e.trace_tree import PARENT_ID, TRACE_ID, TRACEPARENT, order_trace

pytestmark = pytest.mark.e2e

CUSTOMER_FIELDS = ("payment_token", "shipping_address", "name", "line1", "postcode")


@pytest.fixture(scope="module")
def run(assembly: CloudAssembly) -> Iterator[PipelineRun]:
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


@pytest.mark.parametrize("caller_traceparent", [True, False], ids=["caller-traceparent", "minted-at-the-api"])
def test_order_api_one_order_is_one_trace_from_the_api_to_the_last_step(
    run: PipelineRun, caller_traceparent: bool
) -> None:
    """The trace starts at the API: the caller's ``traceparent``, or one the API mints from its request
    ID; intake's span is its child, the saga's steps intake's (decision 0019; MarkCompleted, the last
    state, is a direct DynamoDB write with no span of ours)."""
    assert run.producer.api is not None
    order = make_order(f"order-api-traced-{caller_traceparent}", random.Random(3))
    headers = {"Idempotency-Key": f"{order['order_id']}:1"}
    if caller_traceparent:
        headers["traceparent"] = TRACEPARENT
    with in_memory_tracing() as exporter:
        accepted = run.producer.api.request("POST", "/orders", json.dumps(order).encode(), headers)
        assert accepted.status == 202, accepted.body
        run.drain()
        if caller_traceparent:
            trace_id, root_parent = TRACE_ID, PARENT_ID
        else:  # no traceparent: the API minted it from its request ID
            trace_id = str(accepted.header("x-amzn-RequestId")).replace("-", "")
            root_parent = trace_id[:16]
        trace = order_trace(exporter, trace_id)
    (intake,) = trace.named("record")
    assert trace.parent_id(intake) == root_parent
    for step in ("reserve-inventory", "charge-payment", "ship-order"):
        (span,) = trace.named(step)
        assert trace.parent_id(span) == trace.span_id(intake), step
    trace.assert_connected(root_parent)
    view = json.loads(run.producer.api.get_order(order["order_id"]).body)
    assert view["status"] == "COMPLETED"
    dumped = repr([dict(s.attributes or {}) for s in trace.spans])
    for secret in (order["payment_token"], order["shipping_address"]["name"], order["shipping_address"]["line1"]):
        assert secret not in dumped


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
