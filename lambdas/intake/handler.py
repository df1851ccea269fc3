"""Intake: SQS orders -> validated, recorded, saga started. One correlation ID per record."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Metrics

from lambda_resilience.batch import process_sqs_batch
from lambda_resilience.exceptions import PayloadMismatch
from lambda_resilience.idempotency import business_key
from lambda_resilience.tracing import traced
from order_domain import wiring
from order_domain.errors import AttemptMismatch, OrderIdTaken
from order_domain.logs import get_logger
from order_domain.model import parse_order
from order_domain.orders import attempt_of
from order_domain.settings import load
from order_domain.settings.intake import IntakeSettings

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
    from aws_lambda_powertools.utilities.typing import LambdaContext

settings = load(IntakeSettings)
logger = get_logger()
metrics = Metrics()
# Only what intake uses is imported (wiring imports each service on use): every module is paid for at cold start.
service = wiring.intake_service(settings)
idempotent = wiring.idempotency(settings, logger=logger, metrics=metrics)
routing = wiring.failure_routing(settings)
backoff = wiring.throttle_backoff(settings)


#: Refusals a caller learns through ``GET /orders/{id}`` (409, or ``last_refusal``): decision 0018.
REFUSALS = (PayloadMismatch, OrderIdTaken, AttemptMismatch)


@idempotent
def accept(command: dict[str, Any]) -> dict[str, Any]:
    payload = command["payload"]
    return service.accept(payload["order"], payload.get("caller"))


def _attribute(record: SQSRecord, name: str) -> str | None:
    value = ((record.raw_event.get("messageAttributes") or {}).get(name) or {}).get("stringValue")
    return str(value) if value else None


@metrics.log_metrics
@traced
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    def record_handler(record: SQSRecord, correlation_id: str) -> dict[str, Any]:
        order = parse_order(record.body)
        key = business_key(order["order_id"], "intake", attempt_of(order))
        caller = _attribute(record, "caller")  # the order API's; only the caller's retries share a payload
        payload = {"order": order, **({"caller": caller} if caller else {})}
        try:
            result = accept({"idempotency_key": key, "payload": payload}, context)
        except REFUSALS as exc:
            service.refused(order["order_id"], type(exc).__name__, caller, _attribute(record, "idempotency_key"))
            raise
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
