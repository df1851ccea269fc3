"""moto in this process, made to behave like AWS where the run depends on it (local_cloud.patches)."""

from __future__ import annotations

import logging
import os
import time
import types
import warnings
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from unittest import mock

import botocore.endpoint

from local_cloud.clock import SimClock
from local_cloud.moto_patches import (
    atomic_dynamodb,
    dynamodb_task_timeout,
    sfn_execution_running_from_start,
    sfn_task_timeout_on_clock,
    states_all_excludes_terminal_errors,
)
from local_cloud.moto_speed import cached_asl_parse, cached_json_path_parse, cached_step_functions_clients
from local_cloud.patches import enabled
from local_cloud.powertools_state import metrics_per_invocation
from local_cloud.sfn_task_errors import aws_task_error_names
from local_cloud.sfn_waits import execution_waits, http_retry_waits
from local_cloud.simtime import simulated_now
from local_cloud.template import REGION
from local_cloud.trace_header import execution_trace_header_to_tasks, start_execution_trace_header

FAKE_ENV = {
    "AWS_ACCESS_KEY_ID": "local",
    "AWS_SECRET_ACCESS_KEY": "local",
    "AWS_SESSION_TOKEN": "local",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
    "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
}


#: The speed patches on moto that need no particular order (``local_cloud.patches`` names each one).
SPEED_PATCHES: tuple[tuple[str, Callable[[], AbstractContextManager[None]]], ...] = (
    ("sfn_client_cache", cached_step_functions_clients),
    ("asl_parse_cache", cached_asl_parse),
    ("json_path_cache", cached_json_path_parse),
)


@contextmanager
def moto_behaviour(clock: SimClock) -> Iterator[None]:
    """Our class-level patches on moto's backends: Step Functions retry waits take simulated time,
    DynamoDB item writes are atomic. They hold for ``mock_aws`` and for a moto server in this process.
    """
    from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl

    # A wait on an execution's thread is that execution's alone; the runner's advances the clock (0026).
    shim = types.SimpleNamespace(sleep=clock.sleep, time=time.time, monotonic=time.monotonic)
    # moto logs every caught task failure at ERROR; those are the saga's expected business paths.
    logging.getLogger("moto").setLevel(logging.CRITICAL)
    with ExitStack() as stack:
        stack.enter_context(warnings.catch_warnings())
        warnings.filterwarnings("ignore", message="No application metrics to publish")
        stack.enter_context(mock.patch.object(retrier_decl, "time", shim))
        # botocore's own retry backoff (throttling) also waits in simulated time.
        stack.enter_context(mock.patch.object(botocore.endpoint, "time", shim))
        stack.enter_context(atomic_dynamodb())
        # States.ALL catches neither States.Runtime nor States.DataLimitExceeded, as on AWS.
        stack.enter_context(states_all_excludes_terminal_errors())
        # A DynamoDB task past its TimeoutSeconds fails with States.Timeout, as on AWS.
        stack.enter_context(dynamodb_task_timeout())
        # Lambda, SQS and DynamoDB tasks fail with <Service>.<ErrorName>, as on AWS (after the timeout: wraps it).
        stack.enter_context(aws_task_error_names())
        # ... and a task's TimeoutSeconds counts simulated time, as every other duration here.
        stack.enter_context(sfn_task_timeout_on_clock(clock))
        # A new execution is RUNNING from the moment ListExecutions can see it, as on AWS.
        stack.enter_context(sfn_execution_running_from_start())
        # StartExecution keeps its traceHeader (the execution joins the caller's X-Ray trace), as on AWS.
        stack.enter_context(start_execution_trace_header())
        # ... and its Lambda tasks' invocations get that trace (Lambda's X-Ray header), as on AWS.
        stack.enter_context(execution_trace_header_to_tasks())
        # Each execution waits its own Retry waits and crash timeouts (after the trace header: wraps it).
        stack.enter_context(execution_waits(clock))
        stack.enter_context(http_retry_waits(clock))
        for name, speed_patch in SPEED_PATCHES:
            if enabled(name):
                stack.enter_context(speed_patch())
        # Idempotency expiries and TTLs follow the simulated clock too.
        stack.enter_context(simulated_now(clock))
        # Each invocation's Powertools metrics are its own (one execution environment per invocation).
        stack.enter_context(metrics_per_invocation())
        # SQS visibility, DelaySeconds and timestamps too.
        stack.enter_context(sqs_on_clock(clock))
        yield


@contextmanager
def sqs_on_clock(clock: SimClock) -> Iterator[None]:
    """moto's SQS reads the simulated clock (visibility timeouts, DelaySeconds, sent timestamps)."""
    import moto.sqs.models as sqs_models

    with (
        mock.patch.object(sqs_models, "unix_time_millis", lambda *_: clock.now() * 1000.0),
        mock.patch.object(sqs_models, "unix_time", lambda *_: clock.now()),
    ):
        yield


@contextmanager
def local_aws(clock: SimClock) -> Iterator[None]:
    """moto in-process with Step Functions executing the real ASL; retry waits take simulated time."""
    from moto import mock_aws

    with ExitStack() as stack:
        stack.enter_context(mock.patch.dict(os.environ, FAKE_ENV))
        stack.enter_context(mock_aws(config={"stepfunctions": {"execute_state_machine": True}}))
        stack.enter_context(moto_behaviour(clock))
        yield
