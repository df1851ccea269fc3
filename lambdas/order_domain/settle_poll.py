"""The sweeper's settlement poll: the fallback for the providers' webhooks (:mod:`order_domain.settlement`).

Each sweep reads the orders whose ``settle_due`` has come from the sparse ``unsettled`` index, one Query per
shard (:data:`settlement.SHARDS`), at most ``max_orders`` in all, the most overdue first: never a scan, and an
order the sweep has no capacity or time for is counted as deferred (``SweepDeferred``, alarmed) and polled by
the next sweep. For each order, read whole and strongly consistent:

- a pending refund is looked up by its key (``find_refund``: its ``settlement`` and the provider's
  ``settled_at``) and the answer applied as an observation: never older than an event already applied;
- an ended order with a late failure not announced yet is announced and parked, with the cause in its history;
- an order still open after that is looked at again :data:`settlement.POLL_AFTER_SECONDS` later.

Charges and shipments are followed by their events (``charge.dispute.created``, ``shipment.returned``...): a
provider that has no lookup for them leaves the webhook the one source, and an order with such a pending
record is polled for its refunds only, then rescheduled.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lambda_resilience.idempotency import business_key
from order_domain import clock, settlement
from order_domain.attention import NeedsAttentionNotifier
from order_domain.orders import OrderRepository
from order_domain.ports import RefundLookup
from order_domain.reconcile_sizing import RESERVE_SECONDS as RESERVE_SECONDS  # stop taking orders this early

#: The refund step's business key (order_domain.payments.REFUND).
REFUND_KEY = "refund-payment"
#: Orders polled per sweep: each costs one strongly consistent read, one provider lookup per pending refund
#: and one write; with the sweep's reconciliation within the payment provider's read budget per sweep
#: (order_domain.reconcile_sizing, tests/infra/test_reconcile_sizing.py; docs/providers.md#settlement).
POLL_MAX_ORDERS = 400


@dataclass
class PollResult:
    """What one poll did (order IDs)."""

    polled: list[str] = field(default_factory=list)
    settled: list[str] = field(default_factory=list)  # every effect final and announced: out of the index
    parked: list[str] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class SettlementPoll:
    """Polls the due orders of the ``unsettled`` index (see the module doc)."""

    def __init__(
        self,
        orders: OrderRepository,
        notifier: NeedsAttentionNotifier,
        refunds: RefundLookup | None,
        *,
        logger: Any,
        max_orders: int = POLL_MAX_ORDERS,
    ) -> None:
        """``refunds``: the payment provider when it can look a refund up, else None (webhooks only)."""
        self.orders = orders
        self.notifier = notifier
        self.refunds = refunds
        self.logger = logger
        self.max_orders = max_orders

    def poll(self, seconds_left: Callable[[], float], now: float | None = None) -> PollResult:
        result = PollResult()
        at = clock.now() if now is None else now
        due = self.due(at)
        for order_id in due[: self.max_orders]:
            if seconds_left() < RESERVE_SECONDS:
                result.deferred.append(order_id)
                continue
            try:
                self._one(order_id, at, result)
            except Exception as exc:  # one order's failure must not hide the others
                result.errors.append(order_id)
                self.logger.exception(
                    "settlement poll failed", extra={"order_id": order_id, "error_type": type(exc).__name__}
                )
        result.deferred.extend(due[self.max_orders :])
        return result

    def due(self, now: float) -> list[str]:
        """Up to ``max_orders + 1`` due order IDs per shard, the most overdue first (one Query page each)."""
        found: list[tuple[str, str]] = []
        for shard in range(settlement.SHARDS):
            page = self.orders.client.query(
                TableName=self.orders.table_name,
                IndexName=settlement.UNSETTLED_INDEX,
                KeyConditionExpression="#p = :p AND #d <= :now",
                ExpressionAttributeNames={"#p": settlement.SHARD, "#d": settlement.DUE},
                ExpressionAttributeValues={":p": {"S": str(shard)}, ":now": {"S": clock.iso(now)}},
                Limit=self.max_orders + 1,
            )
            found.extend((i[settlement.DUE]["S"], i["order_id"]["S"]) for i in page.get("Items", []))
        return [order_id for _, order_id in sorted(found)]

    def _one(self, order_id: str, now: float, result: PollResult) -> None:
        item = self.orders.find(order_id)
        if item is None:
            return
        result.polled.append(order_id)
        outcomes = [self._refund(order_id, record) for record in (item.get("settlement") or {}).values()]
        outcomes.append(settlement.park_unannounced(self.orders, order_id, notifier=self.notifier))
        if settlement.PARKED in outcomes:
            result.parked.append(order_id)
        after = self.orders.find(order_id) or {}
        if settlement.DUE not in after:
            result.settled.append(order_id)
        elif after[settlement.DUE] <= clock.iso(now):
            settlement.reschedule(self.orders, order_id, now)

    def _refund(self, order_id: str, record: dict[str, Any]) -> str | None:
        """A pending refund's settlement, looked up and applied; None when there is nothing to ask."""
        if (
            self.refunds is None
            or record.get("effect") != settlement.REFUND
            or record.get("state") != settlement.PENDING
        ):
            return None
        attempt = int(record["attempt"])
        found = self.refunds.find_refund(business_key(order_id, REFUND_KEY, attempt))
        if found is None or found.settlement is None:
            return None
        obs = settlement.Observation(order_id, settlement.REFUND, attempt, found.settlement, found.settled_at)
        return settlement.apply(self.orders, obs, notifier=self.notifier)
