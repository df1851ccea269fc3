"""One order through the local pipeline is one trace (decision 0019): sent with a ``traceparent``
attribute as the order API sends it, intake's span is the child of that span, and every saga step
up to the last one run by a function is in the same trace, connected."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from harness.run.run import PipelineRun, RunOptions, local_pipeline
from harness.workload.orders import make_order
from lambda_resilience.aws import from_item
from lambda_resilience.testing import in_memory_tracing
from local_cloud.clients import aws
from local_cloud.template import CloudAssembly
from tests.e2e.trace_tree import PARENT_ID, order_trace, send_traced_order

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def pipeline(assembly: CloudAssembly) -> Iterator[PipelineRun]:
    with local_pipeline(RunOptions(assembly_dir=assembly.outdir), assembly) as run:
        yield run


def test_tracing_one_order_is_one_connected_trace_from_the_producer_span(pipeline: PipelineRun) -> None:
    order = make_order("order-traced-1", random.Random(7))

    with in_memory_tracing() as exporter:
        send_traced_order(pipeline.producer.queue_url, order, correlation_id="cid-traced", idempotency_key="k-traced")
        pipeline.drain()
        trace = order_trace(exporter)

    item = aws("dynamodb").get_item(TableName=pipeline.orders_table, Key={"order_id": {"S": order["order_id"]}})
    assert from_item(item["Item"])["status"] == "COMPLETED"
    (intake,) = trace.named("record")
    by_id = {trace.span_id(s): s for s in trace.spans}
    assert trace.parent_id(by_id[str(trace.parent_id(intake))]) == PARENT_ID  # via intake's handler span
    # The saga's steps (ShipOrder, the last state, records the outcome itself: decision 0024),
    # each under its function's invocation span, that under intake's record span.
    for step in ("reserve-inventory", "charge-payment", "ship-order"):
        (span,) = trace.named(step)
        assert trace.parent_id(by_id[str(trace.parent_id(span))]) == trace.span_id(intake), step
        assert span.attributes["app.correlation_id"] == "cid-traced", step
    trace.assert_connected(PARENT_ID)
    # No customer data in any span of the order.
    dumped = repr([dict(s.attributes or {}) for s in trace.spans])
    for secret in (order["payment_token"], order["shipping_address"]["name"], order["shipping_address"]["line1"]):
        assert secret not in dumped
