"""lambda_resilience.batch specs: partial failure, all-failed batches, concurrency, one correlation ID per record."""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any

from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from lambda_resilience.batch import DEFAULT_CONCURRENCY, process_sqs_batch
from lambda_resilience.correlation import current_correlation_id
from lambda_resilience.exceptions import PermanentError

from .conftest import Observed


class BadRecord(PermanentError):
    """A record the handler refuses (permanent)."""


def sqs_record(body: Any, correlation_id: str | None = None) -> dict[str, Any]:
    attributes = {}
    if correlation_id:
        attributes["correlation_id"] = {"stringValue": correlation_id, "dataType": "String"}
    return {
        "messageId": str(uuid.uuid4()),
        "receiptHandle": "rh",
        "body": body if isinstance(body, str) else json.dumps(body),
        "attributes": {"ApproximateReceiveCount": "1"},
        "messageAttributes": attributes,
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:orders",
    }


class Handler:
    """A record handler that logs, remembers which correlation ID it saw in scope, and fails bad records.

    It asserts nothing itself (an assert here would become a record failure): tests check ``seen``.
    """

    def __init__(self, observed: Observed) -> None:
        self.observed = observed
        self.seen: dict[str, tuple[str | None, str]] = {}
        self._lock = threading.Lock()

    def __call__(self, record: SQSRecord, correlation_id: str) -> str:
        self.observed.logger.info("processing", extra={"message_id": record.message_id})
        with self._lock:
            self.seen[record.message_id] = (current_correlation_id(), correlation_id)
        body = json.loads(record.body)
        if body.get("bad"):
            raise BadRecord("bad record")
        return correlation_id


def test_batch_one_bad_record_fails_only_itself(observed: Observed, lambda_context: LambdaContext) -> None:
    records = [sqs_record({"n": i, "bad": i == 3}, f"cid-{i}") for i in range(6)]
    handler = Handler(observed)
    response = process_sqs_batch({"Records": records}, lambda_context, handler, logger=observed.logger)
    assert response == {"batchItemFailures": [{"itemIdentifier": records[3]["messageId"]}]}
    assert len(handler.seen) == 6
    assert all(in_scope == given for in_scope, given in handler.seen.values())


def test_batch_every_record_failing_reports_all(observed: Observed, lambda_context: LambdaContext) -> None:
    records = [sqs_record("{not json", f"cid-{i}") for i in range(4)]
    response = process_sqs_batch({"Records": records}, lambda_context, Handler(observed), logger=observed.logger)
    assert sorted(f["itemIdentifier"] for f in response["batchItemFailures"]) == sorted(r["messageId"] for r in records)


def test_batch_records_run_concurrently(observed: Observed, lambda_context: LambdaContext) -> None:
    """Every record waits for all the others: only a concurrent batch can succeed."""
    barrier = threading.Barrier(DEFAULT_CONCURRENCY, timeout=5)

    def wait_for_the_others(record: SQSRecord, correlation_id: str) -> int:
        return barrier.wait()

    records = [sqs_record({"n": i}, f"cid-{i}") for i in range(DEFAULT_CONCURRENCY)]
    response = process_sqs_batch({"Records": records}, lambda_context, wait_for_the_others, logger=observed.logger)
    assert response == {"batchItemFailures": []}
    assert not barrier.broken


def test_batch_each_record_logs_its_own_correlation_id(observed: Observed, lambda_context: LambdaContext) -> None:
    records = [sqs_record({"n": i, "bad": i % 4 == 0}, f"cid-{i}") for i in range(10)]
    handler = Handler(observed)
    process_sqs_batch({"Records": records}, lambda_context, handler, logger=observed.logger)
    by_message = {r["messageId"]: f"cid-{i}" for i, r in enumerate(records)}
    lines = observed.logs()
    assert len(lines) >= 10
    for line in lines:
        assert line["correlation_id"] == by_message[line["message_id"]], line
    assert {m: pair[0] for m, pair in handler.seen.items()} == by_message


def test_batch_error_log_carries_category_and_correlation_id(observed: Observed, lambda_context: LambdaContext) -> None:
    records = [sqs_record({"bad": True}, "cid-bad")]
    process_sqs_batch({"Records": records}, lambda_context, Handler(observed), logger=observed.logger)
    errors = [line for line in observed.logs() if line["level"] == "ERROR"]
    assert len(errors) == 1
    assert errors[0]["correlation_id"] == "cid-bad"
    assert errors[0]["category"] == "permanent" and errors[0]["error_type"] == "BadRecord"
    assert int(errors[0]["receive_count"]) == 1  # Powertools exposes ApproximateReceiveCount as a string


def test_batch_mints_correlation_id_when_absent(observed: Observed, lambda_context: LambdaContext) -> None:
    records = [sqs_record({"n": 1}), sqs_record({"n": 2})]
    process_sqs_batch({"Records": records}, lambda_context, Handler(observed), logger=observed.logger)
    ids = {line["correlation_id"] for line in observed.logs()}
    assert len(ids) == 2 and all(uuid.UUID(i).version == 4 for i in ids)
