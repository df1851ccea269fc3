"""SQS batches: partial failures, one correlation ID per record, classification, DLQ routing."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.utilities.batch import (
    AsyncBatchProcessor,
    BatchProcessor,
    EventType,
    async_process_partial_response,
    process_partial_response,
)

from lambda_resilience.aws import error_code
from lambda_resilience.batch.processor import concurrently
from lambda_resilience.classification import classify
from lambda_resilience.correlation import correlation_scope, from_sqs_record
from lambda_resilience.tracing import record_span, traceparent_from_sqs_record

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from lambda_resilience.backoff import ThrottleBackoff
    from lambda_resilience.dlq import FailureRouting

#: ``record_handler(record, correlation_id) -> result``.
RecordHandler = Callable[["SQSRecord", str], Any]


def _without_repeated_messages(event: dict[str, Any], logger: Logger) -> dict[str, Any]:
    """The event with each SQS message ID once. SQS at-least-once delivery can put the same
    message twice in one batch; processing both would race on one idempotency record and report
    a spurious failure. The repeat is dropped and so counts as processed with the first copy
    (``batchItemFailures`` names message IDs, so a failure of the first covers both)."""
    records = event.get("Records") or []
    seen: set[str] = set()
    unique = []
    for record in records:
        message_id = record.get("messageId") if isinstance(record, dict) else None
        if message_id is not None and message_id in seen:
            with correlation_scope(logger, from_sqs_record(record)):
                logger.info("repeated message in batch skipped", extra={"message_id": message_id})
            continue
        if message_id is not None:
            seen.add(message_id)
        unique.append(record)
    return event if len(unique) == len(records) else {**event, "Records": unique}


def process_sqs_batch(
    event: dict[str, Any],
    context: LambdaContext,
    record_handler: RecordHandler,
    *,
    logger: Logger,
    routing: FailureRouting | None = None,
    backoff: ThrottleBackoff | None = None,
) -> dict[str, Any]:
    """Run ``record_handler(record, correlation_id)`` for each record (concurrently); report failures only.

    With ``routing``, a permanent failure goes to the DLQ at once (see :mod:`lambda_resilience.dlq`)
    and a transient one is recorded before the redrive policy retries it. With ``backoff``, a
    throttled record is sent again with a delay and acknowledged (see :mod:`lambda_resilience.backoff`).

    Each record runs in its own correlation scope: its ID comes from the ``correlation_id``
    message attribute, or is minted here (the entry point) when absent. A failing record is
    logged with its category and correlation ID and reported in ``batchItemFailures``; a batch
    where every record fails reports every record (no exception, so nothing else is retried).
    """
    event = _without_repeated_messages(event, logger)

    def handle(record: SQSRecord) -> Any:
        with (
            correlation_scope(logger, from_sqs_record(record.raw_event)) as cid,
            # The producer's trace continued (the ``traceparent`` message attribute), else a new one.
            record_span("record", traceparent_from_sqs_record(record.raw_event), correlation_id=cid),
        ):
            try:
                return record_handler(record, cid)
            except Exception as exc:
                return _on_failure(record, exc, cid, logger, routing, backoff)

    if len(event.get("Records") or []) <= 1:
        processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
        return dict(process_partial_response(event=event, record_handler=handle, processor=processor, context=context))
    concurrent = AsyncBatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
    return dict(
        async_process_partial_response(
            event=event, record_handler=concurrently(handle), processor=concurrent, context=context
        )
    )


def _on_failure(
    record: SQSRecord,
    exc: Exception,
    cid: str,
    logger: Logger,
    routing: FailureRouting | None,
    backoff: ThrottleBackoff | None,
) -> None:
    """Requeue (throttle), dead-letter (permanent, with routing) and return None, or re-raise."""
    delay = backoff.requeue(record.raw_event, exc) if backoff is not None else None
    if delay is not None:
        logger.warning(
            "record throttled; requeued with a delay",
            extra={"message_id": record.message_id, "delay_seconds": delay, "error": error_code(exc)},
        )
        return None
    category = classify(exc)
    logger.exception(
        "record failed",
        extra={
            "message_id": record.message_id,
            "error_type": type(exc).__name__,
            "category": category,
            "receive_count": int(record.attributes.approximate_receive_count or 0),
        },
    )
    if routing is None:
        raise exc
    try:
        moved = routing.handle(record.raw_event, exc, cid)
    except Exception:
        logger.exception("could not dead-letter the record; leaving it in the queue")
        raise exc from None
    if not moved:
        raise exc
    logger.warning(
        "record dead-lettered without retry",
        extra={"message_id": record.message_id, "category": category, "error_type": type(exc).__name__},
    )
    return None
