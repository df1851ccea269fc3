"""Settled, not sampled: each effect of a payment attempt is followed until its provider reports a final state.

Processors settle after they answer: a Stripe refund answered ``pending`` settles later as
``succeeded`` or ``failed``, and a ``succeeded`` refund can still fail days later
(https://docs.stripe.com/refunds#failed-refunds); a dispute opens on a captured charge weeks later
(https://docs.stripe.com/disputes/how-disputes-work); a carrier's parcel comes back as returned.

**The record.** The order holds one settlement record per effect and attempt, under
``settlement["<effect>#<attempt>"]``: ``{"effect", "attempt", "status", "state", "at", "reason"}``,
``state`` ``pending`` or ``final`` (:data:`FINAL_STATUSES`), ``at`` the provider's own timestamp of the
state (a Stripe event's ``created``). A record moves only forward: an observation older than the
record (a webhook delivered late or out of order, a poll answer older than an event already applied)
is :data:`OLDER` and changes nothing; at the same ``at`` a failure beats a success and a success a
pending state, so a tie never hides a failure. Events are deduplicated by their id
(``settlement_events``, in the same conditional write as the record).

**The index.** While one record is pending, or a late failure is not announced yet, the order carries
``settle_shard`` and ``settle_due``, the keys of the sparse GSI :data:`UNSETTLED_INDEX` (an item without
them is not in the index: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.sparse);
the sweeper polls it, never a scan (:mod:`order_domain.settle_poll`). Once everything is final and
announced the write REMOVEs both, and the order leaves the index.

**A late failure** (:data:`LATE_FAILURES`) on an order that already ended (COMPLETED, COMPENSATED) or is
parked is announced (a needs-attention message, source ``settlement``, first: a duplicate is harmless,
a lost one is not) and the order is parked, NEEDS_ATTENTION, with a history entry naming the cause, in
the same write as the record. A late failure on an order still running waits in the index: the poll parks
it once the order has ended (the saga's own outcome is written first). Only allow-listed reason codes
reach the history, the message or a log line (:func:`order_domain.ports` ``REASON_CODES``).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from lambda_resilience.aws import error_code, to_item
from lambda_resilience.correlation import current_correlation_id
from lambda_resilience.exceptions import TransientStepError
from order_domain import clock
from order_domain.attention import SETTLEMENT, NeedsAttentionNotifier
from order_domain.orders import OrderRepository
from order_domain.status import OrderStatus

CHARGE, REFUND, SHIPMENT = "charge", "refund", "shipment"
PENDING, FINAL = "pending", "final"
#: Every status an effect's settlement may report, and the final ones among them.
STATUSES: dict[str, frozenset[str]] = {
    CHARGE: frozenset({"pending", "succeeded", "failed", "disputed"}),
    REFUND: frozenset({"pending", "succeeded", "failed", "canceled"}),
    SHIPMENT: frozenset({"in_transit", "delivered", "returned"}),
}
FINAL_STATUSES: dict[str, frozenset[str]] = {
    CHARGE: frozenset({"succeeded", "failed", "disputed"}),
    REFUND: frozenset({"succeeded", "failed", "canceled"}),
    SHIPMENT: frozenset({"delivered", "returned"}),
}
#: A final state after which the order's recorded outcome no longer holds: money kept or not received, a
#: parcel back in the warehouse.
LATE_FAILURES: dict[str, frozenset[str]] = {
    CHARGE: frozenset({"failed", "disputed"}),
    REFUND: frozenset({"failed", "canceled"}),
    SHIPMENT: frozenset({"returned"}),
}
#: The orders whose late failure is announced (the parked ones get the cause in their history too).
ENDED = frozenset({OrderStatus.COMPLETED.value, OrderStatus.COMPENSATED.value, OrderStatus.NEEDS_ATTENTION.value})
#: The sparse GSI of orders with an unsettled effect: partition ``settle_shard`` (one of :data:`SHARDS`,
#: spreading the writes), sort ``settle_due`` (when the poll should look next).
UNSETTLED_INDEX, SHARD, DUE = "unsettled", "settle_shard", "settle_due"
SHARDS = 4
#: Until a pending effect is polled again (webhooks are the fast path; the poll is the fallback).
POLL_AFTER_SECONDS = 3600
#: What :func:`apply` did.
APPLIED, PARKED, OLDER, DUPLICATE, UNKNOWN_ORDER = "applied", "parked", "older", "duplicate", "unknown_order"
HOLDER = "settlement"
_RANK = {PENDING: 0, FINAL: 1, "failure": 2}
_WRITE_TRIES = 3


@dataclass(frozen=True)
class Observation:
    """One provider state of one effect: from a webhook event (``event_id``) or a poll (none)."""

    order_id: str
    effect: str
    attempt: int
    status: str
    at: int
    event_id: str | None = None
    reason: str | None = None

    def __post_init__(self) -> None:
        if self.effect not in STATUSES or self.status not in STATUSES[self.effect]:
            raise ValueError(f"unknown settlement {self.effect!r} {self.status!r}")

    @property
    def key(self) -> str:
        return f"{self.effect}#{self.attempt}"


def step_sighting(order_id: str, effect: str, attempt: int) -> Observation:
    """A step's own sighting of a pending effect: no provider time (``at`` 0), so any provider state wins."""
    return Observation(order_id, effect, attempt, PENDING, 0)


class SettlementContention(TransientStepError):
    """The order kept moving under the write: transient (a webhook answers 5xx and is delivered again)."""


def is_final(obs: Observation) -> bool:
    return obs.status in FINAL_STATUSES[obs.effect]


def is_late_failure(obs: Observation) -> bool:
    return obs.status in LATE_FAILURES[obs.effect]


def _rank(effect: str, status: str) -> int:
    if status in LATE_FAILURES[effect]:
        return _RANK["failure"]
    return _RANK[FINAL] if status in FINAL_STATUSES[effect] else _RANK[PENDING]


def supersedes(obs: Observation, record: dict[str, Any] | None) -> bool:
    """Whether ``obs`` is newer than the record (ties: the graver state wins; the same state: no change)."""
    if record is None:
        return True
    at = int(record.get("at", 0))
    if obs.at != at:
        return obs.at > at
    return _rank(obs.effect, obs.status) > _rank(obs.effect, str(record.get("status")))


def record_of(obs: Observation) -> dict[str, Any]:
    return {
        "effect": obs.effect,
        "attempt": obs.attempt,
        "status": obs.status,
        "state": FINAL if is_final(obs) else PENDING,
        "at": obs.at,
        "reason": obs.reason,
        "announced": False,
    }


def unannounced_failures(records: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in records.values() if r.get("status") in LATE_FAILURES[r["effect"]] and not r.get("announced")]


def open_records(records: dict[str, Any]) -> bool:
    """Whether the order belongs in the unsettled index: a pending record, or a failure not announced."""
    return any(r.get("state") == PENDING for r in records.values()) or bool(unannounced_failures(records))


def cause_of(failures: list[dict[str, Any]]) -> str:
    """``refund failed (attempt 1, processing_error)``: codes only, never a provider's text."""
    return "; ".join(
        f"{r['effect']} {r['status']} (attempt {r['attempt']}, {r.get('reason') or 'no reason'})" for r in failures
    )


def shard_of(order_id: str) -> str:
    return str(zlib.crc32(order_id.encode()) % SHARDS)


def apply(orders: OrderRepository, obs: Observation, *, notifier: NeedsAttentionNotifier | None) -> str:
    """Record ``obs`` on its order (see the module doc). Returns :data:`APPLIED`, :data:`PARKED`,
    :data:`OLDER`, :data:`DUPLICATE` or :data:`UNKNOWN_ORDER`; raises :class:`SettlementContention`.
    Without a ``notifier`` (a saga step) a late failure is recorded, never announced: the poll parks it."""
    for _ in range(_WRITE_TRIES):
        item = orders.find(obs.order_id)
        if item is None:
            return UNKNOWN_ORDER
        if obs.event_id is not None and obs.event_id in (item.get("settlement_events") or []):
            return DUPLICATE
        records = dict(item.get("settlement") or {})
        if not supersedes(obs, records.get(obs.key)):
            if obs.event_id is None or _write(orders, item, records, events=[obs.event_id], park=None):
                return OLDER
            continue
        records[obs.key] = record_of(obs)
        park = _announce_if_ended(item, records, notifier)
        if _write(orders, item, records, events=[obs.event_id] if obs.event_id else [], park=park):
            return PARKED if park else APPLIED
    raise SettlementContention(f"order {obs.order_id}: moved under {_WRITE_TRIES} settlement writes")


def park_unannounced(orders: OrderRepository, order_id: str, *, notifier: NeedsAttentionNotifier) -> str:
    """Park an ended order with a late failure still unannounced (the poll's step); :data:`APPLIED` if none."""
    for _ in range(_WRITE_TRIES):
        item = orders.find(order_id)
        if item is None:
            return UNKNOWN_ORDER
        records = dict(item.get("settlement") or {})
        park = _announce_if_ended(item, records, notifier)
        if park is None:
            return APPLIED
        if _write(orders, item, records, events=[], park=park):
            return PARKED
    raise SettlementContention(f"order {order_id}: moved under {_WRITE_TRIES} settlement writes")


def reschedule(orders: OrderRepository, order_id: str, now: float) -> bool:
    """Move a still-open order's ``settle_due`` on by :data:`POLL_AFTER_SECONDS` (the poll looked, nothing
    new); False if the order changed meanwhile (the next poll sees the change)."""
    item = orders.find(order_id)
    if item is None:
        return False
    return _write(orders, item, dict(item.get("settlement") or {}), events=[], park=None, now=now)


def _announce_if_ended(
    item: dict[str, Any], records: dict[str, Any], notifier: NeedsAttentionNotifier | None
) -> str | None:
    """The cause, after the needs-attention message, when an ended order has an unannounced failure."""
    failures = unannounced_failures(records)
    if notifier is None or not failures or item.get("status") not in ENDED:
        return None
    cause = cause_of(failures)
    attempt = max(int(r["attempt"]) for r in failures)
    why = f"settled late after {item['status']}: {cause}"
    notifier.notify(
        item["order_id"],
        payment_attempt=attempt,
        correlation_id=item.get("correlation_id") or current_correlation_id() or f"settlement-{item['order_id']}",
        reason=why,
        error={"Error": "LateSettlementFailure", "Cause": why},
        source=SETTLEMENT,
    )
    for r in failures:
        records[f"{r['effect']}#{r['attempt']}"] = {**r, "announced": True}
    return cause


def _park_sets(item: dict[str, Any], cause: str, values: dict[str, Any]) -> list[str]:
    """The SET clauses (their values added to ``values``) parking the order with ``cause`` in its history."""
    now, attempt = clock.iso(), int(item.get("payment_attempt", 1))
    entry = {"status": OrderStatus.NEEDS_ATTENTION.value, "at": now, "attempt": attempt, "by": HOLDER, "cause": cause}
    values.update(
        {
            ":na": OrderStatus.NEEDS_ATTENTION.value,
            ":now": now,
            ":entry": [entry],
            ":err": {"Error": "LateSettlementFailure", "Cause": cause},
        }
    )
    return [
        "#s = :na",
        "updated_at = :now",
        "history = list_append(if_not_exists(history, :none), :entry)",
        "last_error = :err",
    ]


def _write(
    orders: OrderRepository,
    item: dict[str, Any],
    records: dict[str, Any],
    *,
    events: list[str],
    park: str | None,
    now: float | None = None,
) -> bool:
    """One conditional write of the records (and the park), on the version the caller read."""
    version = int(item.get("settle_version", 0))
    values: dict[str, Any] = {":r": records, ":v": version, ":next": version + 1, ":ev": events, ":none": []}
    sets = [
        "settlement = :r",
        "settle_version = :next",
        "settlement_events = list_append(if_not_exists(settlement_events, :none), :ev)",
    ]
    names = {"#s": "status"}
    if park is not None:
        sets += _park_sets(item, park, values)
    values[":seen"] = item.get("status")
    if open_records(records):
        sets += [f"{SHARD} = :shard", f"{DUE} = :due"]
        values.update(
            {
                ":shard": shard_of(item["order_id"]),
                ":due": clock.iso((clock.now() if now is None else now) + POLL_AFTER_SECONDS),
            }
        )
        update = "SET " + ", ".join(sets)
    else:
        update = "SET " + ", ".join(sets) + f" REMOVE {SHARD}, {DUE}"
    try:
        orders.client.update_item(
            TableName=orders.table_name,
            Key=to_item({"order_id": item["order_id"]}),
            UpdateExpression=update,
            ConditionExpression="#s = :seen AND (attribute_not_exists(settle_version) OR settle_version = :v)",
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=to_item(values),
        )
    except ClientError as exc:
        if error_code(exc) != "ConditionalCheckFailedException":
            raise
        return False
    return True
