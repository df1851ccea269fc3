"""``ops dlq discard``: the on-call's exit for a DLQ message that will never succeed (a poison message).

A message left in a DLQ holds the DLQ's depth alarm in ALARM, and with it the ``OrdersAtRisk`` composite: the
next order-path incident would notify nobody (decision 0030). Replaying a permanent failure fails again; the
exit is to discard it, and nothing is lost: the message (body and every attribute) is archived first, in the
stack's failures table under ``discarded#<message id>``, with who discarded it (the caller's identity, STS
``GetCallerIdentity``, which needs no permission), why and when; only then is it deleted from the DLQ. The
archive expires with the failure records (the DLQ's 14-day retention plus a day): the customer's data is kept
no longer than the DLQ would have kept it. Runbook: docs/runbooks/orders-queue.md#discard-a-message.
"""

from __future__ import annotations

import json
import time
from typing import Any

import botocore.exceptions

from ops.dlq import QUEUES, UnknownQueue, failures_table, lambda_dlq_module
from ops.errors import OpsError, UsageError
from ops.target import Target

#: The archive's key in the failures table.
ARCHIVE_PREFIX = "discarded#"
#: Categories discarded without ``--force``: they fail the same way again (or no failure record says otherwise).
DISCARDABLE = ("permanent", "unclassified")


class MessageNotFound(OpsError):
    """No message of that ID in the DLQ (read to its end)."""


def check_discard_request(queue: str, reason: str) -> None:
    """Refuse a discard that is a mistake, before any AWS call."""
    if queue not in QUEUES:
        raise UnknownQueue(f"unknown queue {queue!r}; choose from {', '.join(sorted(QUEUES))}")
    if not reason.strip():
        raise UsageError("a --reason is required (it is archived with the message: who discarded it and why)")


def discard(
    target: Target, queue: str, message_id: str, *, reason: str, force: bool = False, wait_seconds: int | None = None
) -> dict[str, Any]:
    """Archive DLQ message ``message_id`` of ``queue`` in the failures table, then delete it; what was done
    (order, attempt, correlation ID, category, where it is archived: never the body)."""
    check_discard_request(queue, reason)
    table = failures_table(target)
    if table is None:
        raise UsageError("the stack has no FailuresTableName output: nowhere to archive the message")
    replay = lambda_dlq_module()
    dlq_url = target.output(QUEUES[queue][1])
    wait = target.receive_wait(wait_seconds)
    message = replay.hold(target.client, dlq_url, table, message_id, **wait)
    if message is None:
        raise MessageNotFound(f"message {message_id} not found in the {queue} DLQ (see ops dlq list)")
    try:
        if message.category not in DISCARDABLE and not force:
            raise UsageError(
                f"message {message_id} is a {message.category} failure: replay it (ops dlq replay), or discard "
                "it with --force"
            )
        described = replay.describe(message)
        key = ARCHIVE_PREFIX + message_id
        _archive(target, table, key, queue, message, described, reason)
    except BaseException:
        target.client("sqs").change_message_visibility(
            QueueUrl=dlq_url, ReceiptHandle=message.receipt_handle, VisibilityTimeout=0
        )
        raise
    target.client("sqs").delete_message(QueueUrl=dlq_url, ReceiptHandle=message.receipt_handle)
    return {**described, "discarded": True, "archived_in": {"table": table, "message_id": key}}


def _archive(
    target: Target, table: str, key: str, queue: str, message: Any, described: dict[str, Any], reason: str
) -> None:
    from lambda_resilience.dlq import FAILURE_RECORD_TTL_SECONDS

    now = time.time()
    who = target.client("sts").get_caller_identity()["Arn"]
    item = {
        "message_id": {"S": key},
        "queue": {"S": queue},
        "body": {"S": message.body},
        "attributes": {"S": json.dumps(message.raw_attributes, default=str)},
        "category": {"S": message.category},
        "correlation_id": {"S": described.get("correlation_id") or ""},
        "order_id": {"S": described.get("order_id") or ""},
        "discarded_at": {"S": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))},
        "discarded_by": {"S": who},
        "reason": {"S": reason.strip()},
        "expires_at": {"N": str(int(now) + FAILURE_RECORD_TTL_SECONDS)},
    }
    # Once: a second discard of the same message (a retried command) keeps the first record.
    try:
        target.client("dynamodb").put_item(
            TableName=table, Item=item, ConditionExpression="attribute_not_exists(message_id)"
        )
    except botocore.exceptions.ClientError as exc:  # archived by an earlier attempt: delete it now
        if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
            raise


def add_parser(dlq_commands: Any, target_arguments: Any, wait_argument: Any) -> None:
    """``dlq discard`` on the ``dlq`` subcommands."""
    parser = dlq_commands.add_parser(
        "discard", help="archive a DLQ message (body, attributes, who, why) in the failures table, then delete it"
    )
    parser.add_argument("--queue", required=True, choices=sorted(QUEUES), help="orders | needs-attention")
    parser.add_argument("--message-id", required=True, help="the DLQ message (ops dlq replay --dry-run lists them)")
    parser.add_argument("--reason", required=True, help="why (archived with the message and your identity)")
    parser.add_argument("--force", action="store_true", help="also discard a transient or unknown failure")
    wait_argument(parser)
    target_arguments(parser)
