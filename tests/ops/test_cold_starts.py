"""``ops cold-starts``: Init Duration read from the functions' JSON REPORT records (CloudWatch Logs on moto)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from ops.cold_starts import cold_starts, format_cold_starts

REGION = "us-east-1"


class _Stack:
    """CloudFormation and Lambda answers for one stack with two functions (the logs are moto's)."""

    def get_paginator(self, _: str) -> Any:
        summaries = [
            {"ResourceType": "AWS::Lambda::Function", "PhysicalResourceId": "intake-fn"},
            {"ResourceType": "AWS::Lambda::Function", "PhysicalResourceId": "ship-fn"},
            {"ResourceType": "AWS::SQS::Queue", "PhysicalResourceId": "q"},
        ]
        return type("P", (), {"paginate": lambda *_, **__: [{"StackResourceSummaries": summaries}]})()

    def get_function_configuration(self, FunctionName: str) -> dict[str, Any]:
        return {"LoggingConfig": {"LogGroup": f"/aws/lambda/{FunctionName}"}}


class _Target:
    def __init__(self) -> None:
        self.logs = boto3.client("logs", region_name=REGION)

    def client(self, service: str) -> Any:
        return self.logs if service == "logs" else _Stack()


def _report(init_ms: float | None) -> str:
    metrics: dict[str, Any] = {"durationMs": 12.5, "billedDurationMs": 13, "memorySizeMB": 512}
    if init_ms is not None:
        metrics["initDurationMs"] = init_ms
    return json.dumps({"time": "2026-11-24T21:00:00Z", "type": "platform.report", "record": {"metrics": metrics}})


@pytest.fixture
def target() -> Iterator[_Target]:
    with mock_aws():
        yield _Target()


def test_cold_starts_reads_init_duration_from_report_records(target: _Target) -> None:
    now = int(time.time() * 1000)
    for name, lines in {
        "intake-fn": [_report(812.0), _report(None), '{"level":"INFO","message":"order accepted"}', _report(640.0)],
        "ship-fn": [_report(None)],
    }.items():
        target.logs.create_log_group(logGroupName=f"/aws/lambda/{name}")
        target.logs.create_log_stream(logGroupName=f"/aws/lambda/{name}", logStreamName="s")
        target.logs.put_log_events(
            logGroupName=f"/aws/lambda/{name}",
            logStreamName="s",
            logEvents=[{"timestamp": now, "message": line} for line in lines],
        )

    figures = cold_starts(target, "OrderPipeline-prod", minutes=5)  # type: ignore[arg-type]

    assert figures["intake-fn"] == {"reports": 3, "cold_starts": 2, "init_ms_median": 726.0, "init_ms_max": 812.0}
    assert figures["ship-fn"] == {"reports": 1, "cold_starts": 0, "init_ms_median": None, "init_ms_max": None}
    assert "intake-fn" in format_cold_starts(figures)
