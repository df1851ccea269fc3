"""local_cloud.metrics.MetricStore: AWS/States execution metrics from moto's ListExecutions."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from local_cloud import metrics
from local_cloud.metrics import MetricStore, metric_key

ARN = "arn:aws:states:us-east-1:123456789012:stateMachine:saga"


class _Pages:
    def __init__(self, executions: list[dict[str, Any]]) -> None:
        self.executions = executions

    def get_paginator(self, _name: str) -> _Pages:
        return self

    def paginate(self, **_: Any) -> list[dict[str, Any]]:
        return [{"executions": self.executions}]


def test_metric_store_execution_without_stop_date_counted_once_it_has_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto can list an execution as ABORTED before it sets its stopDate: counted at the next refresh, not a crash."""
    execution: dict[str, Any] = {"executionArn": f"{ARN}:e1", "status": "ABORTED"}
    monkeypatch.setattr(metrics, "aws", lambda _service: _Pages([execution]))
    store = MetricStore({}, [ARN], capture=None)  # type: ignore[arg-type]
    key = metric_key("AWS/States", "ExecutionsAborted", {"StateMachineArn": ARN})

    store._refresh_executions()
    assert store.points[key] == []

    execution["stopDate"] = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
    store._refresh_executions()
    store._refresh_executions()
    assert store.points[key] == [(execution["stopDate"].timestamp(), 1.0)]


class _Listing:
    """ListExecutions, most recent first, in pages of ``size``; counts the pages read."""

    def __init__(self, size: int = 100) -> None:
        self.executions: list[dict[str, Any]] = []  # oldest first
        self.size = size
        self.pages_read = 0

    def start(self, n: int, status: str = "SUCCEEDED") -> list[dict[str, Any]]:
        stop = {"stopDate": datetime(2026, 11, 24, 12, 0, tzinfo=UTC)} if status != "RUNNING" else {}
        new = [{"executionArn": f"{ARN}:e{len(self.executions) + i}", "status": status, **stop} for i in range(n)]
        self.executions.extend(new)
        return new

    def get_paginator(self, _name: str) -> _Listing:
        return self

    def paginate(self, **_: Any) -> Any:
        newest_first = self.executions[::-1]
        for i in range(0, len(newest_first), self.size):
            self.pages_read += 1
            yield {"executions": newest_first[i : i + self.size]}


def test_metric_store_refresh_reads_only_the_executions_new_or_running_since_the_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every simulated minute the evaluator refreshes: reading all of a 2,000-order run's executions each time
    made ``make chaos`` 157 s -> 221 s. A refresh reads the pages up to the last execution it already knows."""
    listing = _Listing(size=100)
    monkeypatch.setattr(metrics, "aws", lambda _service: listing)
    store = MetricStore({}, [ARN], capture=None)  # type: ignore[arg-type]
    succeeded = metric_key("AWS/States", "ExecutionsSucceeded", {"StateMachineArn": ARN})
    failed = metric_key("AWS/States", "ExecutionsFailed", {"StateMachineArn": ARN})
    listing.start(1000)
    store._refresh_executions()
    assert len(store.points[succeeded]) == 1000

    listing.start(30)
    running = listing.start(5, "RUNNING")
    listing.pages_read = 0
    store._refresh_executions()
    assert listing.pages_read == 1  # 35 new ones on the first page, then one already counted
    assert len(store.points[succeeded]) == 1030

    listing.start(250)  # the five still running are now on the fourth page
    for e in running:
        e.update(status="FAILED", stopDate=datetime(2026, 11, 24, 12, 1, tzinfo=UTC))
    listing.pages_read = 0
    store._refresh_executions()
    assert listing.pages_read == 3
    assert (len(store.points[succeeded]), len(store.points[failed])) == (1280, 5)

    listing.pages_read = 0
    store._refresh_executions()
    assert listing.pages_read == 1 and len(store.points[succeeded]) == 1280


def test_metric_store_timed_out_execution_counted_without_a_stop_date(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto's ListExecutions gives no stopDate for TIMED_OUT: counted once, not waited for forever."""
    listing = _Listing()
    monkeypatch.setattr(metrics, "aws", lambda _service: listing)
    store = MetricStore({}, [ARN], capture=None)  # type: ignore[arg-type]
    listing.executions.append({"executionArn": f"{ARN}:t", "status": "TIMED_OUT"})
    store._refresh_executions()
    store._refresh_executions()
    assert len(store.points[metric_key("AWS/States", "ExecutionsTimedOut", {"StateMachineArn": ARN})]) == 1


def _no_api(_service: str) -> Any:
    raise AssertionError("the evaluator called an API for what moto here already holds")


def test_metric_store_reads_moto_executions_without_listing_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """CloudWatch does not call ListExecutions: with moto in this process the refresh reads moto's own
    executions (each ListExecutions sorted and serialized every execution of the run: about 5% of a chaos
    shard's CPU), and counts what the listing counts, once each."""
    import json
    import time

    import boto3
    from moto import mock_aws

    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        sfn = boto3.client("stepfunctions", region_name="us-east-1")
        definition = {"StartAt": "S", "States": {"S": {"Type": "Succeed"}}}
        arn = sfn.create_state_machine(
            name="saga", definition=json.dumps(definition), roleArn="arn:aws:iam::123456789012:role/r"
        )["stateMachineArn"]
        for n in range(5):
            sfn.start_execution(stateMachineArn=arn, name=f"e{n}")
        deadline = time.monotonic() + 10
        while any(e["status"] == "RUNNING" for e in sfn.list_executions(stateMachineArn=arn)["executions"]):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        listed = MetricStore({}, [arn], capture=None)  # type: ignore[arg-type]
        listed._refresh_listed_executions(arn)
        monkeypatch.setattr(metrics, "aws", _no_api)
        live = MetricStore({}, [arn], capture=None)  # type: ignore[arg-type]
        live._refresh_executions()
        live._refresh_executions()
        key = metric_key("AWS/States", "ExecutionsSucceeded", {"StateMachineArn": arn})
        assert len(live.points[key]) == 5
        # the same stops (the API gives them to the millisecond)
        assert [at for at, _ in sorted(live.points[key])] == pytest.approx(
            [at for at, _ in sorted(listed.points[key])], abs=1e-3
        )
