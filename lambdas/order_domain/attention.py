"""Announcing an order that needs an operator: one message on the alarmed needs-attention queue.

The body is the same for every sender (the saga's park, the saga's last-resort route, the sweeper):
``{"order_id", "payment_attempt", "correlation_id", "reason", "error", "source"}``, references only
(no card token, name or address), with the correlation ID also as the ``correlation_id`` message
attribute. A duplicate message is harmless (the operator finds the order already handled); a lost
one is not, so senders announce *before* they write the order's status.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from lambda_resilience.correlation import current_correlation_id, sqs_message_attributes

Source = Literal["saga-park", "saga-last-resort", "sweeper", "settlement"]
SAGA_PARK: Source = "saga-park"
SWEEPER: Source = "sweeper"
#: A provider settled an effect late as a failure (order_domain.settlement).
SETTLEMENT: Source = "settlement"


def attention_body(
    order_id: str,
    *,
    payment_attempt: int,
    correlation_id: str | None,
    reason: str,
    error: dict[str, Any] | None,
    source: Source,
) -> dict[str, Any]:
    """The needs-attention message body (the shared contract above)."""
    return {
        "order_id": order_id,
        "payment_attempt": payment_attempt,
        "correlation_id": correlation_id,
        "reason": reason,
        "error": error,
        "source": source,
    }


class NeedsAttentionNotifier:
    """Sends needs-attention messages (:func:`attention_body`) to the queue."""

    def __init__(self, queue_url: str, *, client: Any) -> None:
        """``queue_url``: the needs-attention queue (required by the settings of every sender);
        ``client``: the SQS client."""
        self.queue_url = queue_url
        self.client = client

    def notify(
        self,
        order_id: str,
        *,
        payment_attempt: int,
        reason: str,
        error: dict[str, Any] | None,
        source: Source,
        correlation_id: str | None = None,
    ) -> str:
        """Send one message; ``correlation_id`` defaults to the one in scope. Returns the message ID."""
        cid = correlation_id or current_correlation_id()
        body = attention_body(
            order_id, payment_attempt=payment_attempt, correlation_id=cid, reason=reason, error=error, source=source
        )
        response = self.client.send_message(
            QueueUrl=self.queue_url,
            MessageBody=json.dumps(body, default=str),
            MessageAttributes=sqs_message_attributes(cid),
        )
        return str(response["MessageId"])
