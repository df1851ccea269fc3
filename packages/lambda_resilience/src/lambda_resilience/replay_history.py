"""A readable record of every automatic DLQ replay, kept in the failures table and read by key.

One item per UTC hour (``message_id`` = ``replay-history#2026-11-27T13``) holds that hour's runs, each
appended with one UpdateItem (``list_append``). Reading a window is a BatchGetItem of its hours' keys
(at most 100 keys a call: https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchGetItem.html):
the calls grow with the window asked for, never with the table's history. Items expire with the failure
records (the DLQ's 14-day retention plus a day, TTL on ``expires_at``).

A run keeps, per replayed message, only what :func:`lambda_resilience.replay.describe` shows (message ID,
order ID, attempt, correlation ID, category, replay count): no customer data. An item is at most 400 KB
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html); a run holds at most
the replay function's per-run cap of messages (about 200 bytes each), and a write the item cannot take
fails in the caller's hands, after the replay itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from lambda_resilience.dlq import FAILURE_RECORD_TTL_SECONDS

HOUR = 3600
KEY_PREFIX = "replay-history#"
#: BatchGetItem's largest request.
BATCH_KEYS = 100
#: The fields of a replayed message a record keeps (lambda_resilience.replay.describe).
KEPT = ("message_id", "order_id", "attempt", "correlation_id", "category", "replay_count")
#: BatchGetItem rounds for keys DynamoDB returned unprocessed (throttling), per batch.
MAX_ROUNDS = 5

_serialize = TypeSerializer().serialize
_deserialize = TypeDeserializer().deserialize


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def hour_key(epoch: float) -> str:
    return KEY_PREFIX + time.strftime("%Y-%m-%dT%H", time.gmtime(epoch))


def record_run(
    client: Callable[[str], Any],
    table: str,
    *,
    dlq: str,
    replayed: list[dict[str, Any]],
    skipped: int,
    now: float | None = None,
    not_received: int = 0,
) -> dict[str, Any]:
    """Append one run to its hour's item; the run as recorded."""
    now = time.time() if now is None else now
    run = {
        "at": _iso(now),
        "epoch": int(now),
        "dlq": dlq,
        "replayed": [{k: m.get(k) for k in KEPT} for m in replayed],
        "skipped": skipped,
        "not_received": not_received,
    }
    client("dynamodb").update_item(
        TableName=table,
        Key={"message_id": {"S": hour_key(now)}},
        UpdateExpression="SET runs = list_append(if_not_exists(runs, :none), :run), expires_at = :exp",
        ExpressionAttributeValues={
            ":none": {"L": []},
            ":run": {"L": [_serialize(run)]},
            ":exp": {"N": str(int(now) + FAILURE_RECORD_TTL_SECONDS)},
        },
    )
    return run


def read_history(
    client: Callable[[str], Any], table: str, *, since_seconds: float, now: float | None = None
) -> list[dict[str, Any]]:
    """The runs recorded in the last ``since_seconds``, oldest first: one BatchGetItem per 100 hours."""
    now = time.time() if now is None else now
    since = now - since_seconds
    first = int(since // HOUR)
    keys = [hour_key(hour * HOUR) for hour in range(first, int(now // HOUR) + 1)]
    items: list[dict[str, Any]] = []
    ddb = client("dynamodb")
    for start in range(0, len(keys), BATCH_KEYS):
        request = {table: {"Keys": [{"message_id": {"S": k}} for k in keys[start : start + BATCH_KEYS]]}}
        for _ in range(MAX_ROUNDS):
            answer = ddb.batch_get_item(RequestItems=request)
            items.extend(answer.get("Responses", {}).get(table, []))
            request = answer.get("UnprocessedKeys") or {}
            if not request:
                break
    runs = [_deserialize(run) for item in items for run in item.get("runs", {}).get("L", [])]
    return sorted((plain(r) for r in runs if r["epoch"] >= since), key=lambda r: r["epoch"])


def plain(value: Any) -> Any:
    """DynamoDB's numbers (Decimal) back as int, in nested maps and lists too."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if type(value).__name__ == "Decimal":
        return int(value)
    return value
