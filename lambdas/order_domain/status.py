"""Order statuses and the allowed transitions between them."""

from __future__ import annotations

from enum import StrEnum


class OrderStatus(StrEnum):
    RECEIVED = "RECEIVED"
    INVENTORY_RESERVED = "INVENTORY_RESERVED"
    PAYMENT_CHARGED = "PAYMENT_CHARGED"
    SHIPPED = "SHIPPED"
    COMPENSATING = "COMPENSATING"
    COMPLETED = "COMPLETED"
    COMPENSATED = "COMPENSATED"
    NEEDS_ATTENTION = "NEEDS_ATTENTION"


TERMINAL = frozenset({OrderStatus.COMPLETED, OrderStatus.COMPENSATED, OrderStatus.NEEDS_ATTENTION})

#: Parking is allowed from every non-terminal status: the park state runs when the compensations
#: kept failing, possibly before any of them moved the order to COMPENSATING; it must not fail on
#: the order's status (the execution would fail and leave the order where it was, unannounced).
_PARK = OrderStatus.NEEDS_ATTENTION

#: status -> statuses it may move to. No step moves an order backwards or skips a state (PAYMENT_CHARGED
#: -> COMPLETED is ShipOrder's one write of SHIPPED and COMPLETED, its history holding both).
TRANSITIONS: dict[OrderStatus, frozenset[OrderStatus]] = {
    OrderStatus.RECEIVED: frozenset({OrderStatus.INVENTORY_RESERVED, OrderStatus.COMPENSATING, _PARK}),
    OrderStatus.INVENTORY_RESERVED: frozenset({OrderStatus.PAYMENT_CHARGED, OrderStatus.COMPENSATING, _PARK}),
    # ShipOrder records SHIPPED and COMPLETED in one write (both history entries; decision 0024).
    OrderStatus.PAYMENT_CHARGED: frozenset(
        {OrderStatus.SHIPPED, OrderStatus.COMPLETED, OrderStatus.COMPENSATING, _PARK}
    ),
    OrderStatus.SHIPPED: frozenset({OrderStatus.COMPLETED, OrderStatus.COMPENSATING, _PARK}),
    OrderStatus.COMPENSATING: frozenset({OrderStatus.COMPENSATED, OrderStatus.NEEDS_ATTENTION}),
    OrderStatus.COMPLETED: frozenset(),
    OrderStatus.COMPENSATED: frozenset(),
    # A parked order leaves only through an operator's repair (`ops repair --action compensate`).
    OrderStatus.NEEDS_ATTENTION: frozenset({OrderStatus.COMPENSATING}),
}


def predecessors(status: OrderStatus) -> frozenset[OrderStatus]:
    """Every status from which ``status`` can be reached (so a move *to* one of them is backwards)."""
    seen: set[OrderStatus] = set()
    frontier = {status}
    while frontier:
        current = frontier.pop()
        for source, targets in TRANSITIONS.items():
            if current in targets and source not in seen:
                seen.add(source)
                frontier.add(source)
    return frozenset(seen)


def sources_of(target: OrderStatus) -> frozenset[OrderStatus]:
    """Statuses that may move directly to ``target``."""
    return frozenset(s for s, targets in TRANSITIONS.items() if target in targets)
