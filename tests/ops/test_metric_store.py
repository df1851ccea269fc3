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
