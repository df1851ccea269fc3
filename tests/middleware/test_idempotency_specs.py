"""Idempotency middleware specs: duplicates, races, crashes, tampering - on moto."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import boto3
import pytest

from ops.local.lambda_runtime import FakeLambdaContext
from shared.correlation import correlation_scope
from shared.exceptions import MissingIdempotencyKey, OperationInProgress, PayloadMismatch
from shared.idempotency import IdempotentOperation, business_key, make_persistence

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
) -> Callable[[dict[str, Any], FakeLambdaContext | None], Any]:
    persistence = make_persistence(table, in_progress_floor_seconds=floor)
    op = IdempotentOperation(persistence=persistence, ttl_seconds=TTL, logger=observed.logger, metrics=observed.metrics)
    return op(effect.run)


def command(amount: int = 100, key: str | None = None) -> dict[str, Any]:
    return {"idempotency_key": key or business_key("order-1", "charge-payment"), "payload": {"amount": amount}}


def record(table: str, key: str) -> dict[str, Any]:
    return boto3.client("dynamodb").get_item(TableName=table, Key={"id": {"S": key}}, ConsistentRead=True)["Item"]


def test_idempotency_same_event_ten_times_runs_once(
    idempotency_table: str, observed: Observed, lambda_context: FakeLambdaContext
) -> None:
    effect = SideEffect()
    run = guarded(observed, idempotency_table, effect)
    with correlation_scope(observed.logger, "cid-ten"):
        results = [run(command(), lambda_context) for _ in range(10)]
    assert effect.calls == 1
    assert all(r == results[0] for r in results)
    assert observed.metric("DuplicatesSuppressed") == 9


def test_idempotency_key_is_readable_business_identity(
    idempotency_table: str, observed: Observed, lambda_context: FakeLambdaContext
) -> None:
    run = guarded(observed, idempotency_table, SideEffect())
    before = time.time()
    run(command(), lambda_context)
    item = record(idempotency_table, "order-1#charge-payment#attempt-1")
    assert item["status"]["S"] == "COMPLETED"
    assert before + TTL - 5 <= int(item["expiration"]["N"]) <= time.time() + TTL + 5


def test_idempotency_sixteen_concurrent_deliveries_one_side_effect(
    idempotency_table: str, observed: Observed, lambda_context: FakeLambdaContext
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
    idempotency_table: str, observed: Observed, lambda_context: FakeLambdaContext
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
    nearly_out_of_time = FakeLambdaContext(function_name="spec", timeout_seconds=0.2)
    with correlation_scope(observed.logger, "cid-takeover"), pytest.raises(SimulatedCrash):
        run(command(), nearly_out_of_time)
    time.sleep(0.3)  # the in-progress expiry (remaining time 0.2 s) has passed
    with correlation_scope(observed.logger, "cid-takeover"):
        result = run(command(), FakeLambdaContext(function_name="spec", timeout_seconds=30))
    assert effect.calls == 2 and result["run"] == 2
    assert observed.metric("IdempotencyTakeovers") == 1
    assert any("took over" in line["message"] for line in observed.logs())


def test_idempotency_in_progress_expiry_clamped_to_floor_and_ceiling(
    idempotency_table: str, observed: Observed
) -> None:
    persistence = make_persistence(idempotency_table, in_progress_floor_seconds=10, in_progress_ceiling_seconds=60)
    op = IdempotentOperation(persistence=persistence, ttl_seconds=TTL, logger=observed.logger)
    for timeout, key, expected in ((0.5, "k#short#attempt-1", 10), (900, "k#long#attempt-1", 60)):
        run = op(SideEffect(crash_first=True).run)
        start_ms = time.time() * 1000
        with pytest.raises(SimulatedCrash):
            run(command(key=key), FakeLambdaContext(function_name="spec", timeout_seconds=timeout))
        expiry = int(record(idempotency_table, key)["in_progress_expiration"]["N"])
        assert abs(expiry - start_ms - expected * 1000) < 2000


def test_idempotency_tampered_payload_rejected_with_both_hashes(
    idempotency_table: str, observed: Observed, lambda_context: FakeLambdaContext
) -> None:
    run = guarded(observed, idempotency_table, SideEffect())
    with correlation_scope(observed.logger, "cid-tamper"):
        run(command(amount=100), lambda_context)
        with pytest.raises(PayloadMismatch):
            run(command(amount=999), lambda_context)
    errors = [line for line in observed.logs() if line["level"] == "ERROR"]
    assert errors and errors[0]["stored_payload_hash"] != errors[0]["received_payload_hash"]
    assert errors[0]["correlation_id"] == "cid-tamper"
    assert observed.metric("PayloadMismatches") == 1


def test_idempotency_missing_key_rejected(
    idempotency_table: str, observed: Observed, lambda_context: FakeLambdaContext
) -> None:
    effect = SideEffect()
    run = guarded(observed, idempotency_table, effect)
    with pytest.raises(MissingIdempotencyKey):
        run({"payload": {"amount": 1}}, lambda_context)
    with pytest.raises(MissingIdempotencyKey):
        business_key("", "charge-payment")
    assert effect.calls == 0


def test_idempotency_dynamodb_calls_two_per_new_event_one_per_duplicate(
    idempotency_table: str, observed: Observed, lambda_context: FakeLambdaContext
) -> None:
    persistence = make_persistence(idempotency_table)
    calls: list[str] = []
    persistence.client.meta.events.register("before-call.dynamodb", lambda model, **_: calls.append(model.name))
    run = IdempotentOperation(persistence=persistence, ttl_seconds=TTL, logger=observed.logger)(SideEffect().run)
    run(command(), lambda_context)
    assert calls == ["PutItem", "UpdateItem"]
    calls.clear()
    run(command(), lambda_context)
    assert calls == ["PutItem"]


def test_idempotency_every_log_line_has_correlation_id(
    idempotency_table: str, observed: Observed, lambda_context: FakeLambdaContext
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
