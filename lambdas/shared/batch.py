"""SQS batches with partial failure and one correlation ID per record, on Powertools batch."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.aws import error_code
from shared.backoff import ThrottleBackoff
from shared.correlation import correlation_scope, from_sqs_record
from shared.dlq import FailureRouting
from shared.exceptions import classify
from shared.tracing import in_worker, record_segment

RecordHandler = Callable[[SQSRecord, str], Any]

#: Records of one batch processed at once. A standard queue promises no order, so records may
#: run concurrently; with N AWS round trips per record the batch takes ~N round trips, not 10 x N.
DEFAULT_CONCURRENCY = 10

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=DEFAULT_CONCURRENCY, thread_name_prefix="record")
        return _pool


class ConcurrentBatchProcessor(BatchProcessor):
    """Powertools' BatchProcessor, with the records of a batch processed on a thread pool.

    Why: Powertools runs records one after another (its async processor needs async handlers,
    and boto3 is synchronous). Everything else - partial responses, failure collection, the
    all-failed behaviour - is Powertools' own.
    """

    def process(self) -> list[tuple[Any, ...]]:
        if len(self.records) <= 1:
            return super().process()
        return list(_executor().map(in_worker(self._process_record), self.records))


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

    With ``routing``, a permanent failure goes to the DLQ at once (see :mod:`shared.dlq`) and a
    transient one is recorded before the redrive policy retries it. With ``backoff``, a throttled
    record is sent again with a delay and acknowledged (see :mod:`shared.backoff`): a quota never
    burns its receive count.

    Each record runs in its own correlation scope: its ID comes from the ``correlation_id``
    message attribute, or is minted here (the entry point) when absent. A failing record is
    logged with its category and correlation ID and reported in ``batchItemFailures``; a
    batch where every record fails reports every record (no exception, so nothing else is retried).
    """
    processor = ConcurrentBatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
    event = _without_repeated_messages(event, logger)

    def handle(record: SQSRecord) -> Any:
        with (
            correlation_scope(logger, from_sqs_record(record.raw_event)) as cid,
            record_segment("## record", correlation_id=cid),
        ):
            try:
                return record_handler(record, cid)
            except Exception as exc:
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
                    raise
                try:
                    moved = routing.handle(record.raw_event, exc, cid)
                except Exception:
                    logger.exception("could not dead-letter the record; leaving it in the queue")
                    raise exc from None
                if not moved:
                    raise
                logger.warning(
                    "record dead-lettered without retry",
                    extra={"message_id": record.message_id, "category": category, "error_type": type(exc).__name__},
                )
                return None

    return dict(process_partial_response(event=event, record_handler=handle, processor=processor, context=context))
