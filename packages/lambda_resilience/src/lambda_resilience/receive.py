"""Read every message of an SQS queue once, as real SQS answers.

SQS is distributed: a short-polled ReceiveMessage (``WaitTimeSeconds=0``) samples a subset of its
servers and may answer empty while the queue holds messages; with ``WaitTimeSeconds`` above 0 (long
polling, at most 20 s) it queries all of them
(https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-short-and-long-polling.html).
Even then, AWS's way to confirm a queue is empty is to watch its approximate counts as well
(https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/confirm-queue-is-empty.html,
https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/troubleshooting-messages-not-returned-ReceiveMessage.html).
So a read ends only after :data:`EMPTY_RECEIVES` long-polled empty receives in a row with the queue's
``ApproximateNumberOfMessages`` at 0 after each; and at the latest after :data:`MAX_EMPTY_RECEIVES`,
with what the queue still counts reported in :class:`ReadEnd` (never a silent undercount).

Every message received stays hidden (its visibility timeout) until the caller releases or deletes it:
received messages are not visible, so ``ApproximateNumberOfMessages`` falls to 0 once all are held.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

#: ReceiveMessage's longest wait (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ReceiveMessage.html).
MAX_WAIT_SECONDS = 20
#: Any wait above 0 is long polling (every server queried); a short one keeps a look at an empty queue quick.
DEFAULT_WAIT_SECONDS = 1
#: Long-polled empty receives in a row, each with the queue's visible count at 0, that end a read.
EMPTY_RECEIVES = 2
#: Empty receives in a row after which a read stops even though the queue still counts messages.
MAX_EMPTY_RECEIVES = 6
#: ReceiveMessage's largest batch.
BATCH = 10
COUNTS = ("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed")


@dataclass
class ReadEnd:
    """How a read ended: complete, or stopped with messages the queue counts but no receive returned."""

    complete: bool = False
    #: ``ApproximateNumberOfMessages`` at the last check: visible, not received by this read.
    not_received: int = 0
    #: ``ApproximateNumberOfMessagesNotVisible``: held by this read, or by another reader (a replay, a consumer).
    not_visible: int = 0
    receives: int = 0


def queue_counts(sqs: Any, url: str) -> dict[str, int]:
    """The queue's approximate counts (GetQueueAttributes: one call)."""
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=list(COUNTS)).get("Attributes", {})
    return {name: int(attributes.get(name, 0)) for name in COUNTS}


def receive_each(
    sqs: Any, url: str, *, visibility_timeout: int, wait_seconds: int = DEFAULT_WAIT_SECONDS, end: ReadEnd | None = None
) -> Iterator[list[dict[str, Any]]]:
    """Yield each batch of messages not received before in this read, until the queue is read to its end.

    ``wait_seconds``: the long poll (1..20; 0 only where the queue has one server, as an emulator).
    ``end``: filled in as the read goes (complete, or what the queue still counts).
    """
    if not 0 <= wait_seconds <= MAX_WAIT_SECONDS:
        raise ValueError(f"wait_seconds must be within 0..{MAX_WAIT_SECONDS}, got {wait_seconds}")
    end = end if end is not None else ReadEnd()
    seen: set[str] = set()
    empty = 0
    while True:
        end.receives += 1
        messages = sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=BATCH,
            VisibilityTimeout=visibility_timeout,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
            WaitTimeSeconds=wait_seconds,
        ).get("Messages", [])
        fresh = [m for m in messages if m["MessageId"] not in seen]
        if fresh:
            empty = 0
            seen.update(m["MessageId"] for m in fresh)
            yield fresh
            continue
        empty += 1
        counts = queue_counts(sqs, url)
        end.not_received = counts["ApproximateNumberOfMessages"]
        end.not_visible = counts["ApproximateNumberOfMessagesNotVisible"]
        if end.not_received == 0 and empty >= EMPTY_RECEIVES:
            end.complete = True
            return
        if empty >= MAX_EMPTY_RECEIVES:
            return
