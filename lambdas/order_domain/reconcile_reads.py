"""Which recently terminal orders still have a payment attempt to reconcile, read in batches.

Every sweep sees every COMPLETED and COMPENSATED order of its window (a 15-minute window and a
sweep every 5 minutes: each order three times), and most were reconciled by an earlier sweep.
Reading each with GetItem costs a round trip per order and sweep (at the seeds' 50,000 orders a
minute, 750,000 a sweep). A strongly consistent BatchGetItem of up to 100 keys, projected to the
attributes that say what is left to check, costs one round trip per 100 orders and the same read
units (BatchGetItem consumes read capacity per item, as GetItem does:
https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchGetItem.html).

The batch is only a filter. An order with an attempt still to check is read again, whole and
strongly consistent, right before it is checked, as before; an order the batch could not answer
for (a failed request, or a key DynamoDB left in ``UnprocessedKeys``) counts as pending, so it is
checked the old way: nothing is skipped on an answer not received. Unprocessed keys are not
retried here (AWS asks for a backoff before a retry, and the per-order read is that fallback).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from lambda_resilience.aws import from_item, to_item

#: BatchGetItem's largest request: 100 keys (the API reference above).
BATCH_KEYS = 100
#: What decides whether an order has an attempt left to check (``sweeper.attempts_of`` and
#: ``reconciled_attempts``).
ATTRIBUTES = ("order_id", "payment_attempt", "attempts", "reconciled_attempts")


def _chunks(ids: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(ids), BATCH_KEYS):
        yield ids[start : start + BATCH_KEYS]


def attempts_of(item: dict[str, Any]) -> list[int]:
    """Every payment attempt the order has had (``attempts``), the current one included."""
    seen = {int(a["attempt"]) for a in item.get("attempts") or [] if isinstance(a, dict) and "attempt" in a}
    seen.add(int(item.get("payment_attempt", 1)))
    return sorted(seen)


def reconciled_attempts(item: dict[str, Any]) -> set[int]:
    """The attempts a sweep already checked against the providers."""
    return {int(a) for a in item.get("reconciled_attempts") or []}


def has_pending(item: dict[str, Any]) -> bool:
    """Whether one of the order's attempts was not checked yet."""
    return not set(attempts_of(item)) <= reconciled_attempts(item)


def _batch(client: Any, table_name: str, ids: list[str], log: Any) -> set[str]:
    """The pending orders of one batch of at most 100 keys (every key on a failed request)."""
    names = {f"#a{i}": name for i, name in enumerate(ATTRIBUTES)}
    request = {
        table_name: {
            "Keys": [to_item({"order_id": order_id}) for order_id in ids],
            "ConsistentRead": True,
            "ProjectionExpression": ", ".join(names),
            "ExpressionAttributeNames": names,
        }
    }
    try:
        response = client.batch_get_item(RequestItems=request)
    except (ClientError, BotoCoreError) as exc:
        log.warning("batch read failed: its orders are checked one by one", extra={"error_type": type(exc).__name__})
        return set(ids)
    items = (from_item(item) for item in response.get("Responses", {}).get(table_name, []))
    pending = {item["order_id"] for item in items if has_pending(item)}
    unprocessed = (response.get("UnprocessedKeys") or {}).get(table_name, {}).get("Keys", [])
    return pending | {from_item(key)["order_id"] for key in unprocessed}


def pending_reconciliation(client: Any, table_name: str, order_ids: Iterable[str], *, log: Any) -> set[str]:
    """The orders of ``order_ids`` with a payment attempt not reconciled yet, or not answered for
    (``client``: the orders table's DynamoDB client; ``log``: the function's logger).

    An order absent from the table is not pending (the per-order read would find nothing either).
    """
    ids = list(dict.fromkeys(order_ids))
    pending: set[str] = set()
    for chunk in _chunks(ids):
        pending |= _batch(client, table_name, chunk, log)
    return pending
