"""The orders queue's message sizes: plain numbers, importable without the CDK (the local run's hostile
input is sized from them without loading the CDK, about 2 s a process)."""

from __future__ import annotations

#: The order message contract's body limit (lambdas/order_domain/model.py MAX_BODY_BYTES; a test
#: keeps them equal: the CDK app does not import the Lambda code).
ORDER_BODY_MAX_BYTES = 64 * 1024
#: Room for the message attributes a producer and intake's requeue send with an order: SQS counts
#: every attribute's name, type and value in the message size ("All parts of the message attribute,
#: including Name, Type, and Value, are part of the message size restriction":
#: https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_MessageAttributeValue.html).
#: The correlation ID (at most 128 characters), the requeue and replay counts need under 300 bytes; 4 KiB.
ORDER_ATTRIBUTES_ALLOWANCE_BYTES = 4 * 1024
#: The orders queue's MaximumMessageSize: a body over the contract (plus attributes) is refused at
#: SendMessage, so the producer learns it synchronously; a body the queue still accepts (up to
#: this size) is dead-lettered by intake as permanent, with its category (the DLQ holds 1 MiB).
ORDERS_QUEUE_MAX_MESSAGE_BYTES = ORDER_BODY_MAX_BYTES + ORDER_ATTRIBUTES_ALLOWANCE_BYTES
