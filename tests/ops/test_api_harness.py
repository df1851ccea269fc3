"""The app's scenarios on the emulator's API Gateway data plane: the producer through the API (``--via
api``), ``ops local up``'s banner and the order API server (the data plane itself is tested in
``packages/local_cloud/tests/test_apigateway.py``, on the fixtures it owns and these tests reuse)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from local_cloud.template import REGION
from tests.ops.emulator_fixtures import load

_gateway = load("test_apigateway", requires=("apigw_fixture",))
fixture = load("apigw_fixture")
ORDER = _gateway.ORDER
api = _gateway.api
deployment = _gateway.deployment


# -- the app's producer through the API (harness --via api) -------------------------------------------
def test_producer_via_api_posts_each_order_and_records_refusals(api: Any) -> None:
    from harness.workload.api_client import OrderApi, idempotency_key
    from harness.workload.producer import Producer

    producer = Producer(api.deployment.queues["OrdersQueue"]["url"], "", "")
    producer.api = OrderApi(api.server.stage_url(fixture.STAGE))
    good = json.dumps({**ORDER, "order_id": "order-2"})
    bad = json.dumps({"order_id": "order-3", "amount": 1})  # no currency
    producer.submit_messages([(good, "cid-good"), (bad, "cid-bad"), ("{" * 20_000, "cid-deep")])
    assert producer.refused_at_send == ["cid-bad", "cid-deep"]
    (message,) = api.messages()
    attributes = {k: v["StringValue"] for k, v in message["MessageAttributes"].items()}
    assert attributes == {"correlation_id": "cid-good", "idempotency_key": idempotency_key(good)}
    assert idempotency_key(good) == "order-2:1"
    assert producer.api.summary() == {"accepted": 1, "refused": {"400": 2}, "retried": 0}


def test_local_up_banner_shows_the_api_url_and_a_sigv4_curl() -> None:
    from harness.stack.up import LocalEndpoint, _api_lines

    lines = _api_lines(LocalEndpoint("http://127.0.0.1:1", "S", {}, REGION, "http://127.0.0.1:2/v1"))
    text = "\n".join(lines)
    assert "http://127.0.0.1:2/v1" in text and "<stage>/<path>" in text
    assert 'curl --aws-sigv4 "aws:amz:us-east-1:execute-api" --user "local:local"' in text
    assert "Idempotency-Key: k1" in text and "-X POST http://127.0.0.1:2/v1/orders" in text
    without = _api_lines(LocalEndpoint("http://127.0.0.1:1", "S", {}, REGION))
    assert without[0].startswith("(the template has no REST API")


def test_order_api_port_in_use_is_an_operator_error(api: Any) -> None:
    from harness.workload.api_client import serve_order_api
    from ops.errors import OpsError

    with pytest.raises(OpsError, match="--api-port"), serve_order_api(api.deployment, api.server.port):
        pass
