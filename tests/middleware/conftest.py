"""Fixtures for the middleware specs: moto, the idempotency table, a fresh logger and metrics."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

import boto3
import pytest
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.typing import LambdaContext

from lambda_resilience.aws import reset_clients
from lambda_resilience.testing import FakeLambdaContext, LogLines, serialised_dynamodb
from tests.moto_session import mocked_aws


@pytest.fixture
def aws() -> Iterator[None]:
    reset_clients()
    with mocked_aws(), serialised_dynamodb():
        yield
    reset_clients()


@pytest.fixture
def idempotency_table(aws: None) -> str:
    name = "idempotency"
    boto3.client("dynamodb").create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return name


@dataclass
class Observed:
    """A logger writing into a capture, a metrics object, and helpers to read both."""

    logger: Logger
    metrics: Metrics
    capture: LogLines

    def logs(self) -> list[dict[str, Any]]:
        return self.capture.records()[0]

    def metric(self, name: str) -> float:
        entry = self.metrics.metric_set.get(name)
        return float(sum(entry["Value"])) if entry else 0.0


@pytest.fixture
def observed() -> Iterator[Observed]:
    capture = LogLines()
    handler = logging.StreamHandler(capture)
    logger = Logger(service=f"spec-{uuid.uuid4().hex[:8]}", logger_handler=handler)
    metrics = Metrics(namespace="Spec", service="spec")
    metrics.clear_metrics()
    yield Observed(logger, metrics, capture)
    metrics.clear_metrics()
    for line in capture.records()[2]:
        json.dumps(line)  # non-JSON output would be a bug in the logger setup; keep it visible on failure


@pytest.fixture
def lambda_context() -> LambdaContext:
    return fake_context(function_name="spec", timeout_seconds=30)


def fake_context(**fields: Any) -> LambdaContext:
    """A :class:`FakeLambdaContext` typed as the Powertools ``LambdaContext`` it stands in for."""
    return cast(LambdaContext, FakeLambdaContext(**fields))
