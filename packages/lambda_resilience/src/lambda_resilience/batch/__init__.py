"""SQS batch processing with partial failures, on Powertools' batch utility."""

from lambda_resilience.batch.processor import DEFAULT_CONCURRENCY
from lambda_resilience.batch.sqs import RecordHandler, process_sqs_batch

__all__ = ["DEFAULT_CONCURRENCY", "RecordHandler", "process_sqs_batch"]
