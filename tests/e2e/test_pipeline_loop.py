"""The local run's own loop reads what Step Functions knows, not what an AWS client's ListExecutions shows:
ListExecutions is eventually consistent, and the fault matrix's lagging-read actor hides orders from it. A
drain that took that read for the truth returned while an order's execution still ran; the matrix's next
phase (``ops repair``) then met a running execution, and the execution changed the order after the
repair was refused."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any
from unittest import mock

import boto3
import pytest

from harness.run.run import PipelineRun, RunOptions, local_pipeline
from local_cloud.lambda_runtime import LocalFunction
from local_cloud.template import CloudAssembly

pytestmark = pytest.mark.e2e


@pytest.fixture
def pipeline(assembly: CloudAssembly) -> Iterator[PipelineRun]:
    with local_pipeline(RunOptions(assembly_dir=assembly.outdir), assembly) as run:
        yield run


def test_pipeline_running_executions_sees_an_execution_list_executions_hides(pipeline: PipelineRun) -> None:
    from moto.stepfunctions.models import StepFunctionBackend

    reserve = pipeline.deployment.function("ReserveInventory")
    entered, release = threading.Event(), threading.Event()
    original_invoke = LocalFunction.invoke

    def held(fn: LocalFunction, event: Any) -> tuple[str, bool]:
        if fn is reserve:
            entered.set()
            release.wait(30)
        return original_invoke(fn, event)

    def lagging(self: Any, *args: Any, **kwargs: Any) -> tuple[list[Any], None]:
        return [], None  # the new execution is not listed yet

    execution = {"order_id": "order-loop-1", "payment_attempt": 1, "correlation_id": "cid-loop-1"}
    with mock.patch.object(LocalFunction, "invoke", held):
        boto3.client("stepfunctions").start_execution(
            stateMachineArn=pipeline.state_machine_arn, name="order-order-loop-1-attempt-1", input=json.dumps(execution)
        )
        try:
            assert entered.wait(30)
            with mock.patch.object(StepFunctionBackend, "list_executions", lagging):
                assert pipeline.running_executions()
        finally:
            release.set()
    pipeline.drain()
    assert not pipeline.running_executions()
