"""The order API's trust model and what real clients send (issue 29), end to end: the synthesized
template's REST API served locally in front of the deployed pipeline, called by two backends with
their own IAM credentials (decision 0018, "Trust model")."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

import pytest
from botocore.credentials import Credentials

from harness.run.run import RunOptions
from harness.stack.pipeline import PipelineRun, local_pipeline
from harness.workload.orders import make_order
from local_cloud.apigateway.server import OTHER_CALLER
from local_cloud.template import REGION, CloudAssembly
from ops.order_api import ApiAnswer, signed_request
from order_domain.model import MAX_BODY_BYTES

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def run(assembly: CloudAssembly) -> Iterator[PipelineRun]:
    with local_pipeline(RunOptions(orders=1, via="api", assembly_dir=assembly.outdir), assembly) as pipeline:
        yield pipeline


def _other(
    run: PipelineRun, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> ApiAnswer:
    """A request signed by a second backend (another IAM principal)."""
    assert run.producer.api is not None
    key, secret = OTHER_CALLER
    return signed_request(method, f"{run.producer.api.base_url}{path}", body, headers, Credentials(key, secret), REGION)


def _post(run: PipelineRun, body: str | bytes, **headers: str) -> ApiAnswer:
    assert run.producer.api is not None
    data = body.encode() if isinstance(body, str) else body
    return run.producer.api.request("POST", "/orders", data, {"Idempotency-Key": "k-trust", **headers})


@pytest.mark.parametrize(
    "content_type",
    ["application/json; charset=utf-8", "application/json;charset=UTF-8", "application/json; charset=UTF-8"],
)
def test_order_api_charset_suffix_is_accepted_and_validated_the_same(run: PipelineRun, content_type: str) -> None:
    order = make_order(f"order-cs-{abs(hash(content_type)) % 10**6}", random.Random(7))
    accepted = _post(run, json.dumps(order), **{"Content-Type": content_type})
    assert accepted.status == 202, accepted.body
    del order["currency"]
    refused = _post(run, json.dumps(order), **{"Content-Type": content_type})
    assert refused.status == 400, refused.body


def test_order_api_400_body_is_json_and_names_the_missing_field(run: PipelineRun) -> None:
    order = make_order("order-no-currency", random.Random(8))
    del order["currency"]
    answer = _post(run, json.dumps(order))
    assert answer.status == 400
    problem = json.loads(answer.body)  # valid JSON, whatever the validator's message quotes
    assert "currency" in problem["detail"]
    assert problem["status"] == 400


def test_order_api_every_gateway_4xx_body_is_json(run: PipelineRun) -> None:
    order = make_order("order-bad-pattern", random.Random(9))
    order["currency"] = 'e"u'
    answers = [
        _post(run, json.dumps(order)),  # a pattern broken: the validator quotes the pattern and the value
        _post(run, json.dumps({**order, "extra": 1})),  # additionalProperties
        _post(run, "{not json"),
    ]
    assert run.producer.api is not None
    answers.append(run.producer.api.request("POST", "/orders", json.dumps(order).encode(), {}))  # no key
    for answer in answers:
        assert 400 <= answer.status < 500, answer.body
        json.loads(answer.body)


def test_order_api_headers_win_over_the_query_string(run: PipelineRun) -> None:
    assert run.producer.api is not None
    order = make_order("order-query-override", random.Random(10))
    answer = run.producer.api.request(
        "POST",
        "/orders?X-Correlation-Id=forged&Idempotency-Key=forged",
        json.dumps(order).encode(),
        {"Idempotency-Key": "k-header", "X-Correlation-Id": "cid-header"},
    )
    assert answer.status == 202, answer.body
    assert answer.header("X-Correlation-Id") == "cid-header"
    assert json.loads(answer.body)["correlation_id"] == "cid-header"


@pytest.mark.parametrize("cid", ['a","forged":"x', "a,b", "a:b", "a b", "x" * 129, "é"])
def test_order_api_unsafe_correlation_id_is_replaced(run: PipelineRun, cid: str) -> None:
    order = make_order(f"order-cid-{abs(hash(cid)) % 10**6}", random.Random(11))
    answer = _post(run, json.dumps(order), **{"X-Correlation-Id": cid.encode("utf-8").decode("latin-1")})
    assert answer.status == 202, answer.body
    assert answer.header("X-Correlation-Id") != cid
    minted = json.loads(answer.body)["correlation_id"]
    assert minted and minted.isascii() and '"' not in minted and "," not in minted


@pytest.mark.parametrize("key", ['k"1', "k,1", "k 1", "k" * 256])
def test_order_api_unsafe_idempotency_key_is_400(run: PipelineRun, key: str) -> None:
    order = make_order(f"order-key-{abs(hash(key)) % 10**6}", random.Random(12))
    answer = _post(run, json.dumps(order), **{"Idempotency-Key": key})
    assert answer.status == 400, answer.body
    assert "Idempotency-Key" in json.loads(answer.body)["detail"]


def test_order_api_body_over_the_contract_limit_is_413_at_the_edge(run: PipelineRun) -> None:
    order = make_order("order-at-limit", random.Random(13))
    text = json.dumps(order)
    at_limit = text + " " * (MAX_BODY_BYTES - len(text.encode()))
    assert len(at_limit.encode()) == MAX_BODY_BYTES
    assert _post(run, at_limit).status == 202
    over = json.dumps({**order, "order_id": "order-over-limit"})
    over += " " * (MAX_BODY_BYTES + 1 - len(over.encode()))
    answer = _post(run, over)
    assert answer.status == 413, answer.body
    assert json.loads(answer.body)["status"] == 413
    run.drain()
    assert run.producer.api is not None
    assert run.producer.api.get_order("order-over-limit").status == 404


def test_order_api_get_is_refused_to_another_caller(run: PipelineRun) -> None:
    order = make_order("order-owned", random.Random(14))
    assert _post(run, json.dumps(order)).status == 202
    run.drain()
    assert run.producer.api is not None
    assert run.producer.api.get_order("order-owned").status == 200
    refused = _other(run, "GET", "/orders/order-owned")
    assert refused.status == 403, refused.body
    assert "COMPLETED" not in refused.body
    json.loads(refused.body)


def _view(run: PipelineRun, order_id: str) -> dict[str, object]:
    assert run.producer.api is not None
    answer = run.producer.api.get_order(order_id)
    assert answer.status == 200, answer.body
    return dict(json.loads(answer.body))


def test_order_api_attempt_2_from_another_caller_changes_nothing(run: PipelineRun) -> None:
    order = make_order("order-victim", random.Random(15), kind="declined")
    assert _post(run, json.dumps(order)).status == 202
    run.drain()
    assert _view(run, "order-victim")["status"] == "COMPENSATED"
    thief = make_order("order-victim", random.Random(16))
    thief["payment_attempt"] = 2
    answer = _other(run, "POST", "/orders", json.dumps(thief).encode(), {"Idempotency-Key": "k-thief"})
    assert answer.status == 202, answer.body  # the edge has no state: intake refuses it
    run.drain()
    view = _view(run, "order-victim")
    assert view["status"] == "COMPENSATED"
    assert view["payment_attempt"] == 1
    conflict = _other(run, "GET", "/orders/order-victim")
    assert conflict.status == 409, conflict.body
    assert "OrderIdTaken" in json.loads(conflict.body)["detail"]


def test_order_api_attempt_2_with_other_items_is_refused_naming_the_rule(run: PipelineRun) -> None:
    order = make_order("order-retry-items", random.Random(17), kind="declined")
    assert _post(run, json.dumps(order)).status == 202
    run.drain()
    retry = make_order("order-retry-items", random.Random(18))
    retry.update(payment_attempt=2, customer_id=order["customer_id"])
    assert _post(run, json.dumps(retry), **{"Idempotency-Key": "k-retry-items"}).status == 202
    run.drain()
    view = _view(run, "order-retry-items")
    assert view["status"] == "COMPENSATED"
    assert view["payment_attempt"] == 1
    assert view["last_refusal"] == {"idempotency_key": "k-retry-items", "rule": "AttemptMismatch"}


def test_order_api_reused_order_id_with_a_different_body_is_a_visible_conflict(run: PipelineRun) -> None:
    order = make_order("order-reused", random.Random(19))
    assert _post(run, json.dumps(order)).status == 202
    run.drain()
    other = make_order("order-reused", random.Random(20))
    assert _post(run, json.dumps(other), **{"Idempotency-Key": "k-reused-2"}).status == 202
    run.drain()
    view = _view(run, "order-reused")
    assert view["last_refusal"] == {"idempotency_key": "k-reused-2", "rule": "PayloadMismatch"}
