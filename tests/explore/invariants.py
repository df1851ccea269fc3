"""The invariants checked after every rule, from the tables and the providers' ledgers (live, and what
the providers forgot: the archive keeps what really moved).

Each returns the violations it finds, one line each; :data:`INVARIANTS` names them (the names
``make explore`` and the regression tests use).

- ``money``: per payment attempt, what is captured and not refunded matches how the attempt ended:
  COMPLETED keeps exactly the order's total, COMPENSATED (and every replaced attempt) keeps none.
- ``parcel``: no live parcel for a COMPENSATED attempt; a COMPLETED one has its parcel; at most one per order.
- ``stock``: a reservation is held only by the current attempt of a non-terminal, parked or COMPLETED
  order; for every SKU, available plus held equals what it started with.
- ``lost_sale``: a valid order (good token, in stock, deliverable) ends COMPENSATED only if it was
  announced (a needs-attention message) or an operator asked for it.
- ``announced``: every parked (NEEDS_ATTENTION) order has a needs-attention message; an execution that
  SUCCEEDED left its attempt COMPLETED or COMPENSATED when it closed (a success that leaves a parked order is
  silent; a park after it closed, a provider's late change, is announced by its own park).
- ``settled``: a provider's late change (a refund that failed days later) is announced within a day.
- ``forward_on_compensating``: no forward step's effect on a COMPENSATING order (recorded by the actor).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from tests.explore.actors import Actors
from tests.explore.world import INVENTORY, LEDGER, ORDERS, STOCK

MONEY_MOVED = ("captured", "partially_captured")
SETTLE_SECONDS = 24 * 3600


class Snapshot:
    """The tables and the providers' records, read once per check."""

    def __init__(self, actors: Actors) -> None:
        world = actors.world
        self.actors = actors
        self.orders = {o["order_id"]: o for o in world.scan(ORDERS)}
        self.inventory = world.scan(INVENTORY)
        self.live = {i["pk"]: i for i in world.scan(LEDGER) if i["sk"] == "op"}
        self.now = world.clock.now()

    def ops(self, provider: str, order_id: str, operation: str, attempt: int) -> list[dict[str, Any]]:
        """The op under the key now and what the provider forgot of it (what moved before it forgot)."""
        pk = f"op#{provider}#{order_id}#{operation}#attempt-{attempt}"
        found = [self.actors.archive[pk]] if pk in self.actors.archive else []
        if pk in self.live:  # archived items left the ledger: a live one under the key is a later request
            found.append(self.live[pk])
        return found

    def outstanding(self, order_id: str, attempt: int) -> int:
        return sum(
            int(op.get("captured_cents", 0))
            for op in self.ops("payment", order_id, "charge-payment", attempt)
            if op.get("status") in MONEY_MOVED and not op.get("refunded")
        )

    def parcels(self, order_id: str, attempt: int) -> int:
        found = self.ops("carrier", order_id, "ship-order", attempt)
        if not found:
            return 0
        # A parcel the carrier forgot stays live whatever a later request under its key says.
        return (
            1 if any(op.get("status") == "shipped" for op in found[:1]) or found[-1].get("status") == "shipped" else 0
        )

    def attempts(self, order: dict[str, Any]) -> list[tuple[int, str]]:
        """(attempt, how it ended): the current one by the order's status, earlier ones COMPENSATED."""
        current = int(order.get("payment_attempt", 1))
        earlier = {int(a["attempt"]) for a in order.get("attempts") or []} - {current}
        return [(a, "COMPENSATED") for a in sorted(earlier)] + [(current, str(order["status"]))]

    def announced(self, order_id: str, since: float = 0.0) -> bool:
        return any(m["order_id"] == order_id and m["at"] >= since for m in self.actors.world.announced)


def total(order: dict[str, Any]) -> int:
    return sum(int(i["quantity"]) * int(i["unit_price_cents"]) for i in order["order"]["items"])


def money(s: Snapshot) -> list[str]:
    found = []
    for oid, order in s.orders.items():
        for attempt, ended in s.attempts(order):
            held = s.outstanding(oid, attempt)
            placed = s.actors.orders.get(oid)
            if placed is not None and attempt in placed.late_attempts:
                continue  # a provider's late change to this attempt (a replaced one too): the ``settled`` invariant's
            if ended == "COMPLETED" and held != total(order):
                found.append(f"money: {oid} attempt {attempt} COMPLETED holds {held} cents of {total(order)}")
            if ended == "COMPENSATED" and held:
                found.append(f"money: {oid} attempt {attempt} COMPENSATED still holds {held} cents")
    return found


def parcel(s: Snapshot) -> list[str]:
    found = []
    for oid, order in s.orders.items():
        live = 0
        for attempt, ended in s.attempts(order):
            parcels = s.parcels(oid, attempt)
            live += parcels
            if ended == "COMPENSATED" and parcels:
                found.append(f"parcel: {oid} attempt {attempt} COMPENSATED with a parcel delivered")
            if ended == "COMPLETED" and not parcels:
                found.append(f"parcel: {oid} attempt {attempt} COMPLETED without a parcel")
        if live > 1:
            found.append(f"parcel: {oid} has {live} parcels")
    return found


def stock(s: Snapshot) -> list[str]:
    found = []
    held: Counter[str] = Counter()
    for item in s.inventory:
        if not str(item["pk"]).startswith("reservation#") or item.get("status") != "RESERVED":
            continue
        held.update({sku: int(q) for sku, q in item.get("items", {}).items()})
        _, oid, attempt_text = str(item["pk"]).split("#")
        order = s.orders.get(oid)
        attempt = int(attempt_text.removeprefix("attempt-"))
        if order is None or attempt != int(order.get("payment_attempt", 1)) or order["status"] == "COMPENSATED":
            found.append(f"stock: {oid} attempt {attempt} still holds a reservation ({order and order['status']})")
    available = {str(i["pk"]).removeprefix("sku#"): int(i["available"]) for i in s.inventory if "available" in i}
    for sku, start in STOCK.items():
        if available.get(sku, 0) + held[sku] != start:
            found.append(f"stock: {sku} available {available.get(sku)} + held {held[sku]} != {start}")
    return found


def lost_sale(s: Snapshot) -> list[str]:
    found = []
    for oid, placed in s.actors.orders.items():
        order = s.orders.get(oid)
        if order is None or not placed.valid or order["status"] != "COMPENSATED" or placed.attempt > 1:
            continue
        if not (placed.operator_compensated or s.announced(oid)):
            found.append(f"lost_sale: valid order {oid} COMPENSATED, nobody paged, no operator asked")
    return found


def announced(s: Snapshot) -> list[str]:
    found = []
    for oid, order in s.orders.items():
        if order["status"] == "NEEDS_ATTENTION" and not s.announced(oid):
            found.append(f"announced: {oid} is parked and nobody was told")
    for execution in s.actors.executions.values():
        if execution.status != "SUCCEEDED" or execution.left is None:
            continue
        status, attempt = execution.left  # when it closed: a later park (a provider's late change) is announced
        if attempt == execution.attempt and status not in ("COMPLETED", "COMPENSATED"):
            found.append(f"announced: {execution.name} SUCCEEDED but {execution.order_id} is {status}")
    return found


def settled(s: Snapshot) -> list[str]:
    found = []
    for oid, placed in s.actors.orders.items():
        order = s.orders.get(oid)
        for at in placed.late_events:
            if order is None or s.now - at < SETTLE_SECONDS:
                continue
            if s.outstanding(oid, placed.attempt) and order["status"] == "COMPENSATED" and not s.announced(oid, at):
                found.append(f"settled: {oid}'s refund failed a day ago, money captured, nobody told")
    return found


def forward_on_compensating(s: Snapshot) -> list[str]:
    return [v for v in s.actors.violations if v.startswith("forward step")]


INVARIANTS: dict[str, Callable[[Snapshot], list[str]]] = {
    "money": money,
    "parcel": parcel,
    "stock": stock,
    "lost_sale": lost_sale,
    "announced": announced,
    "settled": settled,
    "forward_on_compensating": forward_on_compensating,
}


def check(actors: Actors, skip: frozenset[str] = frozenset()) -> list[str]:
    """Every violation of the invariants not in ``skip``, now."""
    snapshot = Snapshot(actors)
    return [line for name, invariant in INVARIANTS.items() if name not in skip for line in invariant(snapshot)]
