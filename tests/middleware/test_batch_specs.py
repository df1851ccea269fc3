"""SQS batch specs: partial failure, all-failed batches, one correlation ID per record."""

from __future__ import annotations

import json
import uuid
from typing import Any

from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from ops.local.lambda_runtime import FakeLambdaContext
from shared.batch import process_sqs_batch
from shared.correlation import current_correlation_id
from shared.exceptions import InvalidOrder

from .conftest import Observed


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


def handler_for(observed: Observed) -> Any:
    def handle(record: SQSRecord, correlation_id: str) -> str:
        observed.logger.info("processing", extra={"message_id": record.message_id})
        assert current_correlation_id() == correlation_id
        body = json.loads(record.body)
        if body.get("bad"):
            raise InvalidOrder("bad record")
        return correlation_id

    return handle


def test_batch_one_bad_record_fails_only_itself(observed: Observed, lambda_context: FakeLambdaContext) -> None:
    records = [sqs_record({"n": i, "bad": i == 3}, f"cid-{i}") for i in range(6)]
    response = process_sqs_batch({"Records": records}, lambda_context, handler_for(observed), logger=observed.logger)
    assert response == {"batchItemFailures": [{"itemIdentifier": records[3]["messageId"]}]}


def test_batch_every_record_failing_reports_all(observed: Observed, lambda_context: FakeLambdaContext) -> None:
    records = [sqs_record("{not json", f"cid-{i}") for i in range(4)]
    response = process_sqs_batch({"Records": records}, lambda_context, handler_for(observed), logger=observed.logger)
    assert sorted(f["itemIdentifier"] for f in response["batchItemFailures"]) == sorted(r["messageId"] for r in records)


def test_batch_each_record_logs_its_own_correlation_id(observed: Observed, lambda_context: FakeLambdaContext) -> None:
    records = [sqs_record({"n": i, "bad": i % 4 == 0}, f"cid-{i}") for i in range(10)]
    process_sqs_batch({"Records": records}, lambda_context, handler_for(observed), logger=observed.logger)
    by_message = {r["messageId"]: f"cid-{i}" for i, r in enumerate(records)}
    lines = observed.logs()
    assert len(lines) >= 10
    for line in lines:
        assert line["correlation_id"] == by_message[line["message_id"]], line


def test_batch_error_log_carries_category_and_correlation_id(
    observed: Observed, lambda_context: FakeLambdaContext
) -> None:
    records = [sqs_record({"bad": True}, "cid-bad")]
    process_sqs_batch({"Records": records}, lambda_context, handler_for(observed), logger=observed.logger)
    errors = [line for line in observed.logs() if line["level"] == "ERROR"]
    assert len(errors) == 1
    assert errors[0]["correlation_id"] == "cid-bad"
    assert errors[0]["category"] == "permanent" and errors[0]["error_type"] == "InvalidOrder"


def test_batch_mints_correlation_id_when_absent(observed: Observed, lambda_context: FakeLambdaContext) -> None:
    records = [sqs_record({"n": 1}), sqs_record({"n": 2})]
    process_sqs_batch({"Records": records}, lambda_context, handler_for(observed), logger=observed.logger)
    ids = {line["correlation_id"] for line in observed.logs()}
    assert len(ids) == 2 and all(uuid.UUID(i).version == 4 for i in ids)
