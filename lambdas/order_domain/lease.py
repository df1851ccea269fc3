"""A conditional lease on the order row: operators (``ops repair``) and the sweeper act on an order
one at a time.

``lease = {"holder", "until"}`` on the order item, taken with one conditional UpdateItem that holds
only if the order is still in the status and ``updated_at`` the caller read and no other holder's
lease is live. Whoever loses the race acts on nothing and says so. A lease is never released early
by anyone but its holder; it expires by itself (``until``), so a crashed holder blocks nobody for
long. Written by hand: a single conditional write, no library offers less.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from lambda_resilience.aws import error_code, to_item
from order_domain import clock

LEASE = "lease"


def acquire(
    client: Any,
    table: str,
    order_id: str,
    *,
    holder: str,
    seconds: float,
    status: str,
    updated_at: str,
    replaces: str | None = None,
) -> bool:
    """Take the order's lease for ``seconds``; False if the order moved or another holder's lease is
    live. ``replaces``: a holder known to be done (e.g. a repair whose execution ended)."""
    now = clock.now()
    try:
        client.update_item(
            TableName=table,
            Key=to_item({"order_id": order_id}),
            UpdateExpression="SET #l = :lease",
            ConditionExpression=(
                "#s = :status AND updated_at = :seen AND "
                "(attribute_not_exists(#l) OR #l.#h IN (:holder, :replaces) OR #l.#u < :now)"
            ),
            ExpressionAttributeNames={"#l": LEASE, "#s": "status", "#h": "holder", "#u": "until"},
            ExpressionAttributeValues=to_item(
                {
                    ":lease": {"holder": holder, "until": clock.iso(now + seconds)},
                    ":status": status,
                    ":seen": updated_at,
                    ":holder": holder,
                    ":replaces": replaces or holder,
                    ":now": clock.iso(now),
                }
            ),
        )
    except ClientError as exc:
        if error_code(exc) != "ConditionalCheckFailedException":
            raise
        return False
    return True


def release(client: Any, table: str, order_id: str, *, holder: str) -> None:
    """Drop the lease if ``holder`` still holds it (nothing otherwise)."""
    try:
        client.update_item(
            TableName=table,
            Key=to_item({"order_id": order_id}),
            UpdateExpression="REMOVE #l",
            ConditionExpression="#l.#h = :holder",
            ExpressionAttributeNames={"#l": LEASE, "#h": "holder"},
            ExpressionAttributeValues=to_item({":holder": holder}),
        )
    except ClientError as exc:
        if error_code(exc) != "ConditionalCheckFailedException":
            raise


def held_by_other(item: dict[str, Any], holder: str) -> str | None:
    """The holder of a live lease on ``item`` other than ``holder``, or None."""
    lease = item.get(LEASE)
    if not isinstance(lease, dict) or lease.get("holder") == holder:
        return None
    return str(lease.get("holder")) if str(lease.get("until", "")) >= clock.iso(clock.now()) else None
