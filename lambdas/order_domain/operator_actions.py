"""Operator commands on an order (``ops repair``, ``ops resolve``): each is one conditional write of the
order itself, under its lease, recorded in its history (who, when, why, which execution), before
anything else is started (docs/decisions/0029).

- **compensate** (a repair): the order moves to COMPENSATING, so the compensations the repair's
  execution runs, and the last one's own COMPENSATED write, act on an order that is already being
  compensated, also when every compensation already ran and answers from its record (before, a
  parked order stayed NEEDS_ATTENTION for good: the last write's condition failed).
- **finish** (a repair, ``redrive``): an order no compensation touched goes on forward; a parked one
  (stuck, or its outcome write failed) moves back to the forward status it was parked from.
- **resolve**: a parked order takes the outcome a person brought about outside the system (COMPLETED
  or COMPENSATED), with their reason; the attempt counts as reconciled (a person vouched for it).

The write holds only if the order is still in the status, ``updated_at`` and payment attempt the
operator read and no other holder's lease is live: whoever loses a race moves nothing and says so.
A history entry is ``{"status", "at", "attempt", "by", "action", "reason"[, "execution"]}``: ``by`` is
the operator's IAM principal, ``reason`` their words, checked to hold no customer data of the order.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from botocore.exceptions import ClientError

from lambda_resilience.aws import error_code, to_item
from order_domain import clock, lease
from order_domain.status import OrderStatus

#: The forward statuses, in the saga's order (a parked order is finished from the last one it reached).
FORWARD = (
    OrderStatus.RECEIVED,
    OrderStatus.INVENTORY_RESERVED,
    OrderStatus.PAYMENT_CHARGED,
    OrderStatus.SHIPPED,
)
#: What ``resolve`` may record: the outcomes a person can bring about by hand.
RESOLVE_OUTCOMES = (OrderStatus.COMPLETED, OrderStatus.COMPENSATED)
REASON_MAX_CHARS = 500
#: A card number (13 to 19 digits, spaces or dashes between) or an e-mail address: never in a reason.
_CARD = re.compile(r"(?:\d[ -]?){12,18}\d")
_EMAIL = re.compile(r"[^\s@]+@[^\s@]+\.[^\s@]+")
#: Customer values shorter than this are not looked for in a reason (a two-letter country, a house number).
_MIN_MATCH = 4


def attempt_entries(item: Mapping[str, Any]) -> list[str]:
    """The statuses the order's current payment attempt went through (entries without an attempt count
    as this one's: the safe reading)."""
    attempt = int(item.get("payment_attempt", 1))
    return [
        str(h.get("status"))
        for h in item.get("history") or []
        if isinstance(h, Mapping) and int(h.get("attempt", attempt)) == attempt
    ]


def compensation_ran(item: Mapping[str, Any]) -> bool:
    """Whether a compensation started for the current attempt (every compensation records COMPENSATING
    before it asks a provider for anything: order_domain.orders.compensating)."""
    return OrderStatus.COMPENSATING.value in (item.get("status"), *attempt_entries(item))


def parked_from(item: Mapping[str, Any]) -> OrderStatus | None:
    """The forward status the current attempt reached before it was parked, or None when the history
    does not say (an order written without one)."""
    reached = [s for s in attempt_entries(item) if s in {f.value for f in FORWARD}]
    return OrderStatus(reached[-1]) if reached else None


def reason_problem(reason: str, order: Mapping[str, Any] | None) -> str | None:
    """What is wrong with an operator's ``reason`` (None: nothing). It is kept on the order for good, so
    it holds no customer data: none of the order's own customer values (token, customer ID, name,
    address), no card number, no e-mail address."""
    text = " ".join(reason.split())
    if not text:
        return "a reason is required: what was done, and where (e.g. a ticket)"
    if len(text) > REASON_MAX_CHARS:
        return f"a reason is at most {REASON_MAX_CHARS} characters, got {len(text)}"
    folded = text.casefold()
    found = [v for v in _customer_values(order or {}) if v.casefold() in folded]
    if found or _CARD.search(text) or _EMAIL.search(text):
        return "the reason must not hold customer data (a name, an address, a token, a card number, an e-mail)"
    return None


def _customer_values(order: Mapping[str, Any]) -> list[str]:
    address = order.get("shipping_address") if isinstance(order.get("shipping_address"), Mapping) else {}
    values = [order.get("payment_token"), order.get("customer_id"), *dict(address or {}).values()]
    return [str(v).strip() for v in values if isinstance(v, str) and len(v.strip()) >= _MIN_MATCH]


def entry(
    status: OrderStatus, attempt: int, *, by: str, action: str, reason: str | None, execution: str | None = None
) -> dict[str, Any]:
    """The history entry of an operator's command."""
    made: dict[str, Any] = {"status": status.value, "at": clock.iso(), "attempt": attempt, "by": by, "action": action}
    made["reason"] = " ".join(reason.split()) if reason else "none given"
    if execution is not None:
        made["execution"] = execution
    return made


def move(
    client: Any,
    table: str,
    item: Mapping[str, Any],
    to: OrderStatus,
    made: Mapping[str, Any],
    *,
    lease_for: tuple[str, float] | None = None,
    replaces: str | None = None,
    also: Mapping[str, Any] | None = None,
    append: Mapping[str, list[Any]] | None = None,
) -> bool:
    """Move the order ``item`` (as the operator read it) to ``to`` with the history entry ``made``;
    False if it moved meanwhile or another holder's lease is live (``replaces``: a holder known to be
    done). ``lease_for=(holder, seconds)``: take the lease for the command's execution; without it, the
    write drops any lease (the order is the command's to close). ``also``: more attributes to set;
    ``append``: lists to extend."""
    now = clock.now()
    attempt = int(item.get("payment_attempt", 1))
    values: dict[str, Any] = {
        ":to": to.value,
        ":now": clock.iso(now),
        ":entry": [dict(made)],
        ":status": item.get("status"),
        ":seen": item.get("updated_at"),
        ":attempt": attempt,
        ":replaces": replaces or "-",
        ":holder": lease_for[0] if lease_for else "-",
        ":none": [],
    }
    update = _update(values, also or {}, append or {})
    if lease_for:
        update += ", #l = :lease"
        values[":lease"] = {"holder": lease_for[0], "until": clock.iso(now + lease_for[1])}
    else:
        update += " REMOVE #l"
    first = "attribute_not_exists(payment_attempt) OR " if attempt == 1 else ""
    try:
        client.update_item(
            TableName=table,
            Key=to_item({"order_id": item["order_id"]}),
            UpdateExpression=update,
            ConditionExpression=(
                f"#s = :status AND updated_at = :seen AND ({first}payment_attempt = :attempt) AND "
                "(attribute_not_exists(#l) OR #l.#h IN (:holder, :replaces) OR #l.#u < :now)"
            ),
            ExpressionAttributeNames={"#s": "status", "#l": lease.LEASE, "#h": "holder", "#u": "until"},
            ExpressionAttributeValues=to_item(values),
        )
    except ClientError as exc:
        if error_code(exc) != "ConditionalCheckFailedException":
            raise
        return False
    return True


def _update(values: dict[str, Any], also: Mapping[str, Any], append: Mapping[str, list[Any]]) -> str:
    """The SET clause of :func:`move` (its values added to ``values``)."""
    sets = ["#s = :to", "updated_at = :now", "history = list_append(if_not_exists(history, :none), :entry)"]
    for i, (name, value) in enumerate(also.items()):
        sets.append(f"{name} = :a{i}")
        values[f":a{i}"] = value
    for i, (name, more) in enumerate(append.items()):
        sets.append(f"{name} = list_append(if_not_exists({name}, :none), :b{i})")
        values[f":b{i}"] = list(more)
    return "SET " + ", ".join(sets)
