"""SQS batches with partial failure and one correlation ID per record, on Powertools batch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.correlation import correlation_scope, from_sqs_record
from shared.exceptions import classify

RecordHandler = Callable[[SQSRecord, str], Any]


def process_sqs_batch(
    event: dict[str, Any],
    context: LambdaContext,
    record_handler: RecordHandler,
    *,
    logger: Logger,
) -> dict[str, Any]:
    """Run ``record_handler(record, correlation_id)`` for each record; report failures only.

    Each record runs in its own correlation scope: its ID comes from the ``correlation_id``
    message attribute, or is minted here (the entry point) when absent. A failing record is
    logged with its category and correlation ID and reported in ``batchItemFailures``; a
    batch where every record fails reports every record (no exception, so nothing else is retried).
    """
    processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)

    def handle(record: SQSRecord) -> Any:
        with correlation_scope(logger, from_sqs_record(record.raw_event)) as cid:
            try:
                return record_handler(record, cid)
            except Exception as exc:
                logger.exception(
                    "record failed",
                    extra={
                        "message_id": record.message_id,
                        "error_type": type(exc).__name__,
                        "category": classify(exc),
                        "receive_count": record.attributes.approximate_receive_count,
                    },
                )
                raise

    return process_partial_response(event=event, record_handler=handle, processor=processor, context=context)
