"""lambda_resilience.idempotency specs: duplicates, races, crashes, tampering - on moto."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.typing import LambdaContext

from lambda_resilience.correlation import correlation_scope
from lambda_resilience.exceptions import MissingIdempotencyKey, OperationInProgress, PayloadMismatch
from lambda_resilience.idempotency import IdempotentOperation, InProgressExpiry, business_key
from tests.middleware.conftest import fake_context

from .conftest import Observed

TTL = 15 * 24 * 3600


class SimulatedCrash(BaseException):
    """An abrupt end (timeout, OOM, kill): not an Exception, so Powertools does not clean up."""


class SideEffect:
    """Counts how often the protected operation really ran."""

    def __init__(self, delay: float = 0.0, crash_first: bool = False) -> None:
        self.calls = 0
        self.delay = delay
        self.crash_first = crash_first
        self._lock = threading.Lock()

    def run(self, command: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.calls += 1
            n = self.calls
        if self.delay:
            time.sleep(self.delay)
        if self.crash_first and n == 1:
            raise SimulatedCrash("killed after the side effect, before the completion marker")
        return {"charged": command["payload"]["amount"], "run": n}


def guarded(
    observed: Observed, table: str, effect: SideEffect, *, floor: float = 5.0
) -> Callable[[dict[str, Any], LambdaContext | None], Any]:
    op = IdempotentOperation(
        table,
        ttl_seconds=TTL,
        logger=observed.logger,
        metrics=observed.metrics,
        in_progress=InProgressExpiry(floor_seconds=floor),
    )
    return op(effect.run)


def payload_hash(payload: dict[str, Any]) -> str:
    return hashlib.md5(json.dumps(payload, sort_keys=True).encode()).hexdigest()  # Powertools' default hash


def command(amount: int = 100, key: str | None = None) -> dict[str, Any]:
    return {"idempotency_key": key or business_key("order-1", "charge-payment"), "payload": {"amount": amount}}


def record(table: str, key: str) -> dict[str, Any]:
    return boto3.client("dynamodb").get_item(TableName=table, Key={"id": {"S": key}}, ConsistentRead=True)["Item"]


def test_idempotency_same_event_ten_times_runs_once(
    idempotency_table: str, observed: Observed, lambda_context: LambdaContext
) -> None:
    effect = SideEffect()
    run = guarded(observed, idempotency_table, effect)
    with correlation_scope(observed.logger, "cid-ten"):
        results = [run(command(), lambda_context) for _ in range(10)]
    assert effect.calls == 1
    assert all(r == results[0] for r in results)
    assert observed.metric("DuplicatesSuppressed") == 9
    duplicates = [line for line in observed.logs() if line["message"] == "duplicate suppressed"]
    assert len(duplicates) == 9
    assert {(line["idempotency_key"], line["correlation_id"]) for line in duplicates} == {
        ("order-1#charge-payment#attempt-1", "cid-ten")
    }


def test_idempotency_key_is_readable_business_identity(
    idempotency_table: str, observed: Observed, lambda_context: LambdaContext
) -> None:
    run = guarded(observed, idempotency_table, SideEffect())
    assert business_key("order-1", "charge-payment", 1) == "order-1#charge-payment#attempt-1"
    before = int(time.time())
    result = run(command(), lambda_context)
    after = int(time.time())
    item = record(idempotency_table, "order-1#charge-payment#attempt-1")
    assert item["status"]["S"] == "COMPLETED"
    assert before + TTL <= int(item["expiration"]["N"]) <= after + TTL
    assert json.loads(item["data"]["S"]) == result
    assert item["validation"]["S"] == payload_hash({"amount": 100})


def test_idempotency_sixteen_concurrent_deliveries_one_side_effect(
    idempotency_table: str, observed: Observed, lambda_context: LambdaContext
) -> None:
    effect = SideEffect(delay=0.2)
    run = guarded(observed, idempotency_table, effect)
    barrier = threading.Barrier(16)
    outcomes: list[Any] = [None] * 16

    def deliver(i: int) -> None:
        barrier.wait()
        with correlation_scope(observed.logger, f"cid-{i}"):
            try:
                outcomes[i] = run(command(), lambda_context)
            except OperationInProgress as exc:
                outcomes[i] = exc

    threads = [threading.Thread(target=deliver, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert effect.calls == 1
    first = [o for o in outcomes if isinstance(o, dict)]
    in_progress = [o for o in outcomes if isinstance(o, OperationInProgress)]
    assert len(first) + len(in_progress) == 16 and first
    # Nothing is lost: an in-progress failure is retried (SQS redelivery) and gets the result.
    for _ in in_progress:
        assert run(command(), lambda_context) == first[0]
    assert effect.calls == 1


def test_idempotency_abrupt_end_redelivery_before_expiry_does_not_rerun(
    idempotency_table: str, observed: Observed, lambda_context: LambdaContext
) -> None:
    effect = SideEffect(crash_first=True)
    run = guarded(observed, idempotency_table, effect)
    with pytest.raises(SimulatedCrash):
        run(command(), lambda_context)
    assert record(idempotency_table, "order-1#charge-payment#attempt-1")["status"]["S"] == "INPROGRESS"
    with pytest.raises(OperationInProgress):
        run(command(), lambda_context)
    assert effect.calls == 1


def test_idempotency_abrupt_end_next_attempt_after_expiry_takes_over(
    idempotency_table: str, observed: Observed
) -> None:
    effect = SideEffect(crash_first=True)
    run = guarded(observed, idempotency_table, effect, floor=0.0)
    nearly_out_of_time = fake_context(function_name="spec", timeout_seconds=0.2)
    with correlation_scope(observed.logger, "cid-takeover"), pytest.raises(SimulatedCrash):
        run(command(), nearly_out_of_time)
    time.sleep(0.3)  # the in-progress expiry (at most the 0.2 s remaining after the record was written) passes
    with correlation_scope(observed.logger, "cid-takeover"):
        result = run(command(), fake_context(function_name="spec", timeout_seconds=30))
    assert effect.calls == 2 and result["run"] == 2
    assert observed.metric("IdempotencyTakeovers") == 1
    assert any("took over" in line["message"] for line in observed.logs())


def test_idempotency_in_progress_expiry_clamped_to_floor_and_ceiling(
    idempotency_table: str, observed: Observed
) -> None:
    op = IdempotentOperation(
        idempotency_table, ttl_seconds=TTL, logger=observed.logger, in_progress=InProgressExpiry(10, 60)
    )
    for timeout, key, expected in ((0.5, "k#short#attempt-1", 10), (900, "k#long#attempt-1", 60)):
        run = op(SideEffect(crash_first=True).run)
        start_ms = time.time() * 1000
        with pytest.raises(SimulatedCrash):
            run(command(key=key), fake_context(function_name="spec", timeout_seconds=timeout))
        end_ms = time.time() * 1000
        expiry = int(record(idempotency_table, key)["in_progress_expiration"]["N"])
        # Set at some moment of the call: bounded by the call's own start and end (a loaded machine may take
        # seconds between them; a fixed tolerance around the start failed CI once at 14.6 s).
        assert start_ms + expected * 1000 - 1000 <= expiry <= end_ms + expected * 1000 + 1000


def test_idempotency_tampered_payload_rejected_with_both_hashes(
    idempotency_table: str, observed: Observed, lambda_context: LambdaContext
) -> None:
    effect = SideEffect()
    run = guarded(observed, idempotency_table, effect)
    with correlation_scope(observed.logger, "cid-tamper"):
        run(command(amount=100), lambda_context)
        with pytest.raises(PayloadMismatch):
            run(command(amount=999), lambda_context)
    (error,) = [line for line in observed.logs() if line["level"] == "ERROR"]
    assert error["message"] == "idempotency key reused with a different payload"
    assert error["idempotency_key"] == "order-1#charge-payment#attempt-1"
    assert error["stored_payload_hash"] == payload_hash({"amount": 100})
    assert error["received_payload_hash"] == payload_hash({"amount": 999})
    assert error["correlation_id"] == "cid-tamper"
    assert observed.metric("PayloadMismatches") == 1
    assert effect.calls == 1
    assert record(idempotency_table, "order-1#charge-payment#attempt-1")["status"]["S"] == "COMPLETED"


@pytest.mark.parametrize(
    "bad_command",
    [
        {"payload": {"amount": 1}},
        {"idempotency_key": "", "payload": {"amount": 1}},
        {"idempotency_key": "   ", "payload": {"amount": 1}},
        {"idempotency_key": 42, "payload": {"amount": 1}},
    ],
)
def test_idempotency_missing_key_rejected(
    idempotency_table: str, observed: Observed, lambda_context: LambdaContext, bad_command: dict[str, Any]
) -> None:
    effect = SideEffect()
    run = guarded(observed, idempotency_table, effect)
    with pytest.raises(MissingIdempotencyKey):
        run(bad_command, lambda_context)
    assert effect.calls == 0
    assert boto3.client("dynamodb").scan(TableName=idempotency_table)["Items"] == []


@pytest.mark.parametrize(("entity", "operation", "attempt"), [("", "charge", 1), ("o-1", "", 1), ("o-1", "charge", 0)])
def test_idempotency_business_key_refuses_incomplete_identity(entity: str, operation: str, attempt: int) -> None:
    with pytest.raises(MissingIdempotencyKey):
        business_key(entity, operation, attempt)


def test_idempotency_dynamodb_calls_two_per_new_event_one_per_duplicate(
    idempotency_table: str, observed: Observed, lambda_context: LambdaContext
) -> None:
    op = IdempotentOperation(idempotency_table, ttl_seconds=TTL, logger=observed.logger)
    calls: list[str] = []
    op.persistence.client.meta.events.register("before-call.dynamodb", lambda model, **_: calls.append(model.name))
    run = op(SideEffect().run)
    run(command(), lambda_context)
    assert calls == ["PutItem", "UpdateItem"]
    calls.clear()
    run(command(), lambda_context)
    assert calls == ["PutItem"]


def test_idempotency_every_log_line_has_correlation_id(
    idempotency_table: str, observed: Observed, lambda_context: LambdaContext
) -> None:
    effect = SideEffect()
    run = guarded(observed, idempotency_table, effect)
    with correlation_scope(observed.logger, "cid-logs"):
        run(command(), lambda_context)
        run(command(), lambda_context)
        with pytest.raises(PayloadMismatch):
            run(command(amount=5), lambda_context)
    lines = observed.logs()
    assert lines and all(line.get("correlation_id") == "cid-logs" for line in lines)


def test_idempotency_uncached_answer_is_returned_and_never_stored(
    idempotency_table: str, observed: Observed, lambda_context: LambdaContext
) -> None:
    """An answer of the moment (a compensation's "stale") is computed again on every call, so a later
    call with the same key runs the operation for real (decision 0028)."""
    from lambda_resilience.exceptions import UncachedAnswer

    calls: list[str] = []

    def compensate(command: dict[str, Any]) -> dict[str, Any]:
        calls.append("run")
        if len(calls) == 1:
            raise UncachedAnswer({"status": "stale"})
        return {"status": "refunded"}

    run = IdempotentOperation(idempotency_table, ttl_seconds=TTL, logger=observed.logger)(compensate)
    with correlation_scope(observed.logger, "cid-moment"):
        first = run(command(), lambda_context)
        key = command()["idempotency_key"]
        stored_after_first = boto3.client("dynamodb").get_item(TableName=idempotency_table, Key={"id": {"S": key}})
        second = run(command(), lambda_context)
        third = run(command(), lambda_context)

    assert first == {"status": "stale"} and "Item" not in stored_after_first
    assert second == third == {"status": "refunded"} and calls == ["run", "run"]
