"""Intake: SQS orders -> validated, recorded, saga started. One correlation ID per record."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Metrics

from lambda_resilience.aws import client
from lambda_resilience.backoff import ThrottleBackoff
from lambda_resilience.batch import process_sqs_batch
from lambda_resilience.dlq import FailureRouting
from lambda_resilience.idempotency import IdempotentOperation, business_key
from lambda_resilience.tracing import traced
from order_domain.intake import IntakeService
from order_domain.logs import get_logger
from order_domain.model import parse_order
from order_domain.orders import OrderRepository, attempt_of
from order_domain.saga_start import SagaStarter
from order_domain.settings import Settings

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
    from aws_lambda_powertools.utilities.typing import LambdaContext

settings = Settings.from_env(required=("IDEMPOTENCY_TABLE_NAME", "ORDERS_TABLE_NAME", "STATE_MACHINE_ARN"))
logger = get_logger()
metrics = Metrics()
# Only what intake uses is imported: every module here is paid for at cold start.
service = IntakeService(OrderRepository(settings.orders_table or ""), SagaStarter(settings.state_machine_arn or ""))
idempotent = IdempotentOperation(
    settings.idempotency_table, ttl_seconds=settings.idempotency_ttl_seconds, logger=logger, metrics=metrics
)
routing = FailureRouting(settings.dead_letter_queue_url, settings.failures_table, client)
# Set by the stack unless context intake_throttle_backoff=false (today's behaviour: a throttle burns a receive).
_requeue_url = os.environ.get("THROTTLE_REQUEUE_QUEUE_URL")
backoff = ThrottleBackoff(_requeue_url, client) if _requeue_url else None


@idempotent
def accept(command: dict[str, Any]) -> dict[str, Any]:
    return service.accept(command["payload"]["order"])


@metrics.log_metrics
@traced
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    def record_handler(record: SQSRecord, correlation_id: str) -> dict[str, Any]:
        order = parse_order(record.body)
        key = business_key(order["order_id"], "intake", attempt_of(order))
        result = accept({"idempotency_key": key, "payload": {"order": order}}, context)
        logger.info(
            "order accepted",
            extra={
                "order_id": order["order_id"],
                "payment_attempt": result["payment_attempt"],
                "recorded": result["recorded"],
                "execution_arn": result["execution_arn"],
            },
        )
        return result

    return process_sqs_batch(event, context, record_handler, logger=logger, routing=routing, backoff=backoff)
