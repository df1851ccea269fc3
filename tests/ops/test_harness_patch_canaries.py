"""Canaries for the patches the app's scenarios add on top of the emulator's
(:data:`harness.faults.patches.APP_PATCHES`: chaos and the fault matrix inject faults into third-party code): each
fails loudly when an upgrade of moto, Powertools or urllib3 moves what a scenario patches. The emulator's own
patches have their canaries in its package (``packages/local_cloud/tests/test_patch_canaries.py``).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from harness.faults import patches
from local_cloud import patches as emulator
from local_cloud.patch_scan import unregistered_patches

REPO = Path(__file__).resolve().parents[2]
#: The app's scenarios on the emulator.
PATCHING_SOURCES = (REPO / "harness",)
#: Our own classes and modules the scenarios patch (not third-party internals).
OWN_TARGETS = {
    "LocalFunction",
    "SqsPoller",
    "order_domain.clock",
    "ops.repair",
    "order_domain.sweeper",
    "payment",  # lambdas/sandbox/payment.py: the stand-in provider chaos takes down (harness.run.incidents)
    "carrier",  # lambdas/sandbox/carrier.py
}


def _params(fn: Any) -> list[str]:
    return list(inspect.signature(fn).parameters)


# -- the registry itself -----------------------------------------------------------------------------
def test_registry_every_app_target_resolves_today() -> None:
    for patch in patches.APP_PATCHES:
        for module, attribute in emulator.targets(patch):
            assert emulator.resolve(module, attribute) is not None, f"{patch.name}: {module}:{attribute} moved"


def test_registry_every_app_canary_named_exists_in_this_module() -> None:
    names = {name for name in globals() if name.startswith("test_canary_")}
    for patch in patches.APP_PATCHES:
        assert patch.canary in names, f"{patch.name} names a missing canary {patch.canary}"


def test_registry_lists_every_attribute_the_harness_patches() -> None:
    """A ``mock.patch.object(owner, "attr", ...)`` in harness on third-party code is registered."""
    registered = [target for p in patches.PATCHES for target in emulator.targets(p)]
    assert unregistered_patches(PATCHING_SOURCES, registered, OWN_TARGETS) == []


# -- fault injection ---------------------------------------------------------------------------------
def test_canary_moto_sqs_send_signatures() -> None:
    """chaos's throttle_sqs reads (queue_name, message_body | entries) positionally or by keyword."""
    from moto.sqs.models import SQSBackend

    assert _params(SQSBackend.send_message)[:3] == ["self", "queue_name", "message_body"]
    assert _params(SQSBackend.send_message_batch) == ["self", "queue_name", "entries"]


def test_canary_powertools_save_success_signature() -> None:
    from aws_lambda_powertools.utilities.idempotency import base as handler_base
    from aws_lambda_powertools.utilities.idempotency.persistence.base import BasePersistenceLayer

    assert _params(BasePersistenceLayer.save_success) == ["self", "data", "result"]
    assert "persistence_store.save_success(" in inspect.getsource(handler_base)


def test_canary_powertools_save_inprogress_signature() -> None:
    from aws_lambda_powertools.utilities.idempotency import base as handler_base
    from aws_lambda_powertools.utilities.idempotency.persistence.base import BasePersistenceLayer

    assert _params(BasePersistenceLayer.save_inprogress) == ["self", "data", "remaining_time_in_millis"]
    assert "persistence_store.save_inprogress(" in inspect.getsource(handler_base)
    assert _params(BasePersistenceLayer._get_hashed_idempotency_key) == ["self", "data"]
    assert _params(BasePersistenceLayer._delete_record) == ["self", "data_record"]


def test_canary_moto_list_executions_answers_results_and_a_token() -> None:
    """harness.matrix.actors filters the backend's (executions, next token); the response reads it that way."""
    from moto.stepfunctions.models import StepFunctionBackend
    from moto.stepfunctions.responses import StepFunctionResponse

    assert _params(StepFunctionBackend.list_executions)[:3] == ["self", "state_machine_arn", "status_filter"]
    assert "results, next_token = self.stepfunction_backend.list_executions(" in inspect.getsource(
        StepFunctionResponse.list_executions
    )


def test_registry_readme_lists_every_patch_as_registered() -> None:
    doc = (REPO / "docs" / "local-run.md").read_text()
    assert patches.markdown_rows() in doc, "docs/local-run.md's patch table is stale: paste patches.markdown_rows()"


def test_canary_execution_state_attempts_go_through_evaluate_with_timeout() -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.execute_state import ExecutionState

    source = inspect.getsource(ExecutionState._eval_state)
    assert "self._evaluate_with_timeout(env)" in source and "self._from_error(env=env, ex=ex)" in source
    assert _params(ExecutionState._evaluate_with_timeout) == ["self", "env"]
    assert _params(ExecutionState._from_error) == ["self", "env", "ex"]


def test_canary_urllib3_make_request_errors_are_retried_by_urlopen() -> None:
    import urllib3

    pool = urllib3.connectionpool.HTTPConnectionPool
    assert _params(pool._make_request)[:4] == ["self", "conn", "method", "url"]
    source = inspect.getsource(pool.urlopen)
    assert "self._make_request(" in source and "retries.increment(" in source
    assert issubclass(urllib3.exceptions.ReadTimeoutError, urllib3.exceptions.TimeoutError)
