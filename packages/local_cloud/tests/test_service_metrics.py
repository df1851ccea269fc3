"""AWS's own throttle and API metrics, produced by the emulator from its own events, and the alarms on them.

A throttled invocation (``AWS/Lambda Throttles``), a throttled state transition (``AWS/States
ExecutionThrottled``) and a 5XX the local API answered (``AWS/ApiGateway 5XXError``) each reach
CloudWatch's alarm evaluation as AWS defines them (:mod:`local_cloud.service_metrics`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apigw_fixture as fixture
import botocore.exceptions
import pytest
from test_apigateway import ORDER, Harness

from local_cloud.alarms import AlarmEvaluator
from local_cloud.apigateway import integrations
from local_cloud.apigateway.server import serve_rest_api
from local_cloud.capture import LineCapture
from local_cloud.clock import SimClock
from local_cloud.deploy import LocalDeployment
from local_cloud.environment import local_aws
from local_cloud.limits import Quotas
from local_cloud.limits_enforce import LimitEnforcer
from local_cloud.metrics import MetricStore, metric_key
from local_cloud.template import CloudAssembly

SAGA = "arn:aws:states:us-east-1:123456789012:stateMachine:saga"


def _alarm(namespace: str, name: str, dimensions: dict[str, str]) -> dict[str, Any]:
    return {
        "Type": "AWS::CloudWatch::Alarm",
        "Properties": {
            "Namespace": namespace,
            "MetricName": name,
            "Dimensions": [{"Name": k, "Value": v} for k, v in dimensions.items()],
            "Statistic": "Sum",
            "Period": 60,
            "EvaluationPeriods": 1,
            "Threshold": 0,
            "ComparisonOperator": "GreaterThanThreshold",
            "TreatMissingData": "notBreaching",
        },
    }


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalDeployment]:
    """The API fixture with alarms on Throttles, ExecutionThrottled and 5XXError."""
    template = fixture.template()
    template["Resources"].update(
        {
            "ThrottlesAlarm": _alarm("AWS/Lambda", "Throttles", {"FunctionName": "fn"}),
            "ExecutionThrottledAlarm": _alarm("AWS/States", "ExecutionThrottled", {"StateMachineArn": SAGA}),
            "ApiErrorsAlarm": _alarm("AWS/ApiGateway", "5XXError", {"ApiName": "orders-api", "Stage": fixture.STAGE}),
        }
    )
    outdir: Path = tmp_path_factory.mktemp("cdk.out")
    (outdir / f"{fixture.STACK}.template.json").write_text(json.dumps(template))
    clock = SimClock()
    with local_aws(clock):
        yield LocalDeployment(CloudAssembly(outdir, fixture.STACK), clock).deploy()


class _Pager:
    """The alarm actions as a page log: (alarm, new state) of every state change."""

    def __init__(self) -> None:
        self.pages: list[tuple[str, str]] = []

    def execute(self, alarm: dict[str, Any], old: str, new: str, reason: str, at: float | None = None) -> list[Any]:
        self.pages.append((alarm["AlarmName"], new))
        return []


def _evaluator(deployment: LocalDeployment) -> tuple[AlarmEvaluator, MetricStore]:
    capture = LineCapture()
    store = MetricStore({}, [], capture, deployment.clock, service=deployment.service_metrics)
    pager: Any = _Pager()
    return AlarmEvaluator(deployment.alarms, {}, capture, pager, store=store, clock=deployment.clock), store


def _paged(evaluator: AlarmEvaluator, logical_id: str) -> bool:
    """Whether the alarm of that logical ID went to ALARM (a page) in an evaluation now."""
    evaluator.evaluate()
    pager: Any = evaluator.actions
    return any(logical_id in name and state == "ALARM" for name, state in pager.pages)


def test_service_metrics_throttled_invoke_counts_throttles_not_invocations(deployment: LocalDeployment) -> None:
    evaluator, store = _evaluator(deployment)
    limits = LimitEnforcer(Quotas(lambda_concurrency=1), deployment.clock, deployment)
    assert limits.acquire("fn")
    assert not limits.acquire("fn")  # the account's concurrency is taken: TooManyRequestsException
    deployment.clock.advance(61)
    assert _paged(evaluator, "ThrottlesAlarm")
    assert store.points[metric_key("AWS/Lambda", "Throttles", {"FunctionName": "fn"})][-1][1] == 1.0
    assert metric_key("AWS/Lambda", "Invocations", {"FunctionName": "fn"}) not in store.points


def test_service_metrics_throttled_state_transition_is_execution_throttled(deployment: LocalDeployment) -> None:
    evaluator, _ = _evaluator(deployment)
    limits = LimitEnforcer(Quotas(sfn_transition_bucket=1, sfn_transition_refill=1), deployment.clock, deployment)
    limits.transition(SAGA)  # the bucket's one token
    waiter = threading.Thread(target=limits.transition, args=(SAGA,))  # the next entry waits for a refill
    waiter.start()
    while limits.transition_waiters == 0 and waiter.is_alive():
        waiter.join(0.01)
    deployment.clock.advance(2)  # the bucket refills; the execution goes on (slowed, not failed)
    waiter.join(5)
    assert not waiter.is_alive()
    deployment.clock.advance(60)
    assert _paged(evaluator, "ExecutionThrottledAlarm")


def test_service_metrics_api_5xx_is_5xx_error(deployment: LocalDeployment, monkeypatch: pytest.MonkeyPatch) -> None:
    evaluator, store = _evaluator(deployment)
    assert not _paged(evaluator, "ApiErrorsAlarm")

    class FailingSqs:
        def send_message(self, **_: Any) -> None:
            error = {"Error": {"Code": "InternalError", "Message": "internal error"}}
            raise botocore.exceptions.ClientError({**error, "ResponseMetadata": {"HTTPStatusCode": 500}}, "SendMessage")

    deployment.iam = None
    with serve_rest_api(deployment) as server:
        api = Harness(server, deployment)
        assert api.call("POST", "/orders", ORDER, {"Idempotency-Key": "k1"}).status == 202
        monkeypatch.setattr(integrations, "aws", lambda _service: FailingSqs())
        assert api.call("POST", "/orders", ORDER, {"Idempotency-Key": "k2"}).status == 500
    deployment.clock.advance(61)
    assert _paged(evaluator, "ApiErrorsAlarm")
    key = metric_key("AWS/ApiGateway", "5XXError", {"ApiName": "orders-api", "Stage": fixture.STAGE})
    assert [v for _, v in store.points[key]] == [0.0, 1.0]
