"""The patches the order app's scenarios apply on top of the emulator's (:mod:`local_cloud.patches`).

Chaos (:mod:`harness.faults.chaos`) and the fault matrix (:mod:`harness.faults.inject`) inject faults
into third-party code; each such patch is registered here, with its canary in
``tests/ops/test_harness_patch_canaries.py``. :data:`PATCHES` is both registries: the one table
``docs/local-run.md`` shows (:func:`markdown_rows`).
"""

from __future__ import annotations

from local_cloud.patches import PATCHES as EMULATOR_PATCHES
from local_cloud.patches import Patch
from local_cloud.patches import markdown_rows as _markdown_rows

#: The app's own fault-injection patches.
APP_PATCHES: tuple[Patch, ...] = (
    Patch(
        "crash_before_completion",
        "aws_lambda_powertools.utilities.idempotency.persistence.base:BasePersistenceLayer.save_success",
        "fault-injection",
        "A crash after the side effect and before the completion marker (Powertools has no hook there).",
        "harness.faults.chaos.inject",
        "test_canary_powertools_save_success_signature",
    ),
    Patch(
        "throttle_sqs",
        "moto.sqs.models:SQSBackend.{send_message,send_message_batch}",
        "fault-injection",
        "SQS sends answer RequestThrottled (moto has no fault injection).",
        "harness.faults.chaos.inject",
        "test_canary_moto_sqs_send_signatures",
    ),
    Patch(
        "matrix_task_faults",
        "moto.stepfunctions.parser.asl.component.state.exec.execute_state:ExecutionState.{_evaluate_with_timeout,"
        "_from_error}",
        "fault-injection",
        "The fault matrix fails a Task attempt with the error Step Functions reports for it (before the task "
        "acts, or after it acted), stops the execution or times it out there, keyed by the order ID in the "
        "state input; _from_error (on each subclass defining it) reports an injected error as named (moto's "
        "DynamoDB task would rename it DynamoDB.AmazonDynamoDBException).",
        "harness.faults.inject.inject_plan",
        "test_canary_execution_state_attempts_go_through_evaluate_with_timeout",
    ),
    Patch(
        "matrix_provider_transport",
        "urllib3.connectionpool:HTTPConnectionPool._make_request",
        "fault-injection",
        "The fault matrix loses a provider's answer after the provider acted (read timeout, connection reset), "
        "at the HTTPS adapters' transport: urllib3 retries it with the same Idempotency-Key, as it would on AWS.",
        "harness.faults.inject.inject_plan",
        "test_canary_urllib3_make_request_errors_are_retried_by_urlopen",
    ),
    Patch(
        "matrix_duplicate_invocation",
        "aws_lambda_powertools.utilities.idempotency.persistence.base:BasePersistenceLayer.save_inprogress",
        "fault-injection",
        "The fault matrix holds a duplicate live invocation right after its IN_PROGRESS record is written, "
        "while Step Functions' own invocation runs; and deletes an order's expired records once, as "
        "DynamoDB's TTL would, before they are read (Powertools has no hook there).",
        "harness.matrix.actors.inject_actors",
        "test_canary_powertools_save_inprogress_signature",
    ),
    Patch(
        "matrix_list_executions_lag",
        "moto.stepfunctions.models:StepFunctionBackend.list_executions",
        "fault-injection",
        "ListExecutions is eventually consistent on AWS; the fault matrix leaves an order's executions out of "
        "it while a cell says so (moto's is strongly consistent).",
        "harness.matrix.actors.inject_actors",
        "test_canary_moto_list_executions_answers_results_and_a_token",
    ),
)

#: Every patch a local run applies: the emulator's, then the app's.
PATCHES: tuple[Patch, ...] = (*EMULATOR_PATCHES, *APP_PATCHES)


def markdown_rows() -> str:
    """The rows of docs/local-run.md's patch table (``tests/ops/test_harness_patch_canaries.py`` checks the doc
    holds them)."""
    return _markdown_rows(PATCHES)
