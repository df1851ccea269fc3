"""How the fault matrix judges an order's end: from the orders table, the providers' own ledgers, the
inventory reservations, the needs-attention queue and the alarms, never from what the code meant.

Side effects are read per payment attempt (the providers' keys and the reservations name it): attempt 2
after a compensated attempt 1 is one capture refunded and one live, not a double charge. An order is

- ``COMPLETED``: its current attempt captured once and shipped once, nothing refunded or released,
  and every earlier attempt settled (money back, no parcel, no stock held);
- ``COMPENSATED``: every attempt settled;
- ``NEEDS_ATTENTION``: announced (a message on the needs-attention queue and its alarm in ALARM) and
  its side effects known (issue 28): no duplicate, nothing refunded for a parcel that left or stock
  released for it, and nothing live from an attempt other than the parked one (an operator's repair
  acts on the current attempt only, so an earlier attempt's money or parcel would be out of reach).

Anything else is a ``VIOLATION``, with what disagrees.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

_ATTEMPT = re.compile(r"#attempt-(\d+)")


@dataclass
class Effects:
    """One payment attempt's side effects: the providers' ledgers and the attempt's reservation."""

    captures: int = 0
    refunds: int = 0
    live_shipments: int = 0
    reserved: bool = False
    released: bool = False

    @property
    def settled(self) -> bool:
        """Money back, no parcel out, no stock held."""
        return self.refunds >= self.captures and not self.live_shipments and not self.reserved


@dataclass
class OrderFacts:
    """What the tables, the sandbox ledger, the needs-attention queue and the alarms say of one order."""

    order_id: str
    status: str | None
    captures: int = 0
    refunds: int = 0
    live_shipments: int = 0
    reserved: bool = False  # a reservation still RESERVED
    released: bool = False
    attention_messages: int = 0
    attention_alarm: bool = False
    executions: dict[str, int] = field(default_factory=dict)  # status -> count
    attempt: int = 1  # the order's current payment attempt
    by_attempt: dict[int, Effects] = field(default_factory=dict)  # empty: the totals are attempt 1's

    def attempts(self) -> dict[int, Effects]:
        if self.by_attempt:
            return self.by_attempt
        return {self.attempt: Effects(self.captures, self.refunds, self.live_shipments, self.reserved, self.released)}


def _attempt_of(key: Any) -> int:
    found = _ATTEMPT.search(str(key or ""))
    return int(found.group(1)) if found else 1


def facts_from_records(
    order_ids: Iterable[str],
    statuses: Mapping[str, Mapping[str, Any]],
    ledger: Iterable[Mapping[str, Any]],
    inventory: Iterable[Mapping[str, Any]],
) -> dict[str, OrderFacts]:
    """Each order's status, provider side effects (sandbox ledger ops) and reservations (inventory
    table), in total and per payment attempt."""
    facts = {
        oid: OrderFacts(
            order_id=oid,
            status=statuses.get(oid, {}).get("status"),
            attempt=int(statuses.get(oid, {}).get("payment_attempt", 1) or 1),
        )
        for oid in order_ids
    }
    for op in ledger:
        f = facts.get(str(op.get("order_id")))
        if f is None or op.get("sk") != "op":
            continue
        action, status = op.get("action"), op.get("status")
        effects = f.by_attempt.setdefault(_attempt_of(op.get("idempotency_key")), Effects())
        if action == "charge" and status in ("captured", "partially_captured"):
            f.captures += 1
            effects.captures += 1
        elif action == "refund" and status == "refunded":
            f.refunds += 1
            effects.refunds += 1
        elif action == "ship" and status == "shipped":
            f.live_shipments += 1
            effects.live_shipments += 1
    for item in inventory:
        f = facts.get(str(item.get("order_id")))
        if f is None or not str(item.get("pk", "")).startswith("reservation#"):
            continue
        effects = f.by_attempt.setdefault(_attempt_of(item.get("pk")), Effects())
        effects.reserved = effects.reserved or item.get("status") == "RESERVED"
        effects.released = effects.released or item.get("status") == "RELEASED"
        f.reserved = f.reserved or effects.reserved
        f.released = f.released or effects.released
    return facts


def classify(f: OrderFacts) -> tuple[str, list[str]]:
    """``(outcome, what disagrees)``: COMPLETED / COMPENSATED / NEEDS_ATTENTION, or VIOLATION with reasons."""
    per = f.attempts()
    problems: list[str] = []
    for n, e in sorted(per.items()):
        where = f"attempt {n}: " if len(per) > 1 else ""
        if e.captures > 1:
            problems.append(f"{where}{e.captures} captures")
        if e.live_shipments > 1:
            problems.append(f"{where}{e.live_shipments} live shipments")
        if e.refunds > e.captures:
            problems.append(f"{where}{e.refunds} refunds for {e.captures} captures")
    current = per.get(f.attempt, Effects())
    earlier_settled = all(e.settled for n, e in per.items() if n != f.attempt)
    completed = (
        current.captures == 1
        and current.refunds == 0
        and current.live_shipments == 1
        and not current.released
        and earlier_settled
    )
    compensated = all(e.settled for e in per.values())
    harm = _parked_harm(f, per)
    if not problems and f.status == "COMPLETED" and completed:
        return "COMPLETED", []
    if not problems and f.status == "COMPENSATED" and compensated:
        return "COMPENSATED", []
    if not problems and not harm and f.attention_messages and f.attention_alarm:
        return "NEEDS_ATTENTION", []
    if f.status in ("COMPLETED", "COMPENSATED"):
        problems.append(_disagrees(str(f.status), f))
    elif f.attention_messages and not f.attention_alarm:
        problems.append("announced but the needs-attention alarm is not in ALARM")
    elif not f.attention_messages:
        problems.append(f"status {f.status} and nothing on the needs-attention queue")
    problems.extend(harm)
    if f.executions:
        problems.append("executions " + ",".join(f"{k}={v}" for k, v in sorted(f.executions.items())))
    return "VIOLATION", problems


def _parked_harm(f: OrderFacts, per: Mapping[int, Effects]) -> list[str]:
    """Money and parcel read for a parked or announced order too (issue 28): announcing does not make
    harm a success, and a parked order's side effects must be known. Money given back or stock
    released for a parcel that left, an earlier attempt's money or parcel still out (no repair of the
    parked attempt reaches it), or a COMPLETED order whose money went back or whose parcel was recalled
    (a compensation that ran on a finished order) is a violation."""
    harm = []
    for n, e in sorted(per.items()):
        where = f"attempt {n}: " if len(per) > 1 else ""
        if e.refunds and e.live_shipments:
            harm.append(f"{where}refunded ({e.refunds}) with a live shipment")
        if e.released and e.live_shipments:
            harm.append(f"{where}stock released with a live shipment")
        if n != f.attempt and not e.settled:
            harm.append(
                f"attempt {n} (not the current {f.attempt}) still has captures={e.captures} refunds={e.refunds} "
                f"live_shipments={e.live_shipments} reserved={e.reserved}"
            )
    current = per.get(f.attempt, Effects())
    if f.status == "COMPLETED" and f.attention_messages and (current.refunds or not current.live_shipments):
        harm.append(f"COMPLETED but refunds={current.refunds} live_shipments={current.live_shipments}")
    return harm


def _disagrees(status: str, f: OrderFacts) -> str:
    text = (
        f"{status} but captures={f.captures} refunds={f.refunds} live_shipments={f.live_shipments} "
        f"reserved={f.reserved} released={f.released}"
    )
    if len(f.attempts()) > 1:
        text += " (" + "; ".join(f"attempt {n}: {e}" for n, e in sorted(f.attempts().items())) + ")"
    return text + ", not announced"
