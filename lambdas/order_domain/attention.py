"""Parking an order that could not be compensated: an explicit message on an alarmed queue."""

from __future__ import annotations

import json
from typing import Any

from lambda_resilience.aws import client
from lambda_resilience.correlation import current_correlation_id, sqs_message_attributes
from lambda_resilience.exceptions import ConfigurationError


class NeedsAttentionNotifier:
    """Sends ``{order_id, correlation_id, error}`` to the needs-attention queue."""

    def __init__(self, queue_url: str | None) -> None:
        self.queue_url = queue_url

    def notify(self, order_id: str, error: dict[str, Any]) -> str:
        if not self.queue_url:
            raise ConfigurationError("NEEDS_ATTENTION_QUEUE_URL is not set: a parked order would go unnoticed")
        body = {"order_id": order_id, "correlation_id": current_correlation_id(), "error": error}
        response = client("sqs").send_message(
            QueueUrl=self.queue_url,
            MessageBody=json.dumps(body, default=str),
            MessageAttributes=sqs_message_attributes(),
        )
        return str(response["MessageId"])
