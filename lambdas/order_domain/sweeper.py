"""The sweeper: finish or park stuck orders, and reconcile terminal orders with the providers' records.

**Stuck orders** are non-terminal for longer than the threshold (orders table, by-status index).
The threshold exceeds the saga's execution timeout, so the execution that last wrote the order has
ended; what may still run is a later one (an operator's repair starts with cached steps that write
nothing), so the sweeper lists the state machine's RUNNING executions once per sweep (ListExecutions
filters by status on the server) and leaves alone any order one of them belongs to. Each other
stuck order, under its own correlation ID, is

- **finished** if it is SHIPPED (or PAYMENT_CHARGED with a ship intent: decision 0028) and the providers say the
  charge is captured (not refunded) and the shipment is live: COMPLETED, with a conditional write;
- otherwise **parked**: a needs-attention message (source ``sweeper``), then NEEDS_ATTENTION with a
  conditional write. Announce first, as the saga's park does: a lost message is the one outcome
  that must not happen, a duplicate is harmless.

Both writes are conditional on the status and ``updated_at`` the sweeper read (optimistic lock): an
order that moved meanwhile is left to the next sweep. A finished or parked order is terminal, so a
repeated sweep does not see it again.

**Reconciliation.** Orders that became COMPLETED or COMPENSATED within the reconcile window are
looked up at the providers by their idempotency keys (``find_charge`` / ``find_shipment``): a
COMPLETED order without a capture or without a live shipment, or a COMPENSATED order with money
still captured (or held) or a live shipment, is announced (needs-attention message + the
SideEffectMismatches metric, alarmed). Each payment attempt is checked once, every attempt included:
the earlier attempts of a retried payment (they ended COMPENSATED) are checked with the current one,
and the attempts checked are recorded on the order (``reconciled_attempts``, with the last result in
``reconciled``; ``updated_at`` is not touched, so the order does not move in the index).
Which orders of the window still have an attempt to check is read 100 at a time
(:mod:`order_domain.reconcile_reads`); only those are read whole, right before their check.
A sweep checks at most ``reconcile_max_orders`` orders (two provider lookups
each), oldest first, ``workers`` at once, each provider's lookups paced below its read limit
(:mod:`order_domain.pacing`; the figures: :mod:`order_domain.reconcile_sizing`, sized to the seeds' rate); it
stops taking orders :data:`RESERVE_SECONDS` before its timeout. The rest are counted as deferred (SweepDeferred)
and left to the next sweep: above that many terminal orders per window, some leave the window unchecked, and
the metric says so.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from lambda_resilience.aws import error_code, from_item, to_item
from order_domain import clock, intents, lease
from order_domain.attention import SWEEPER, NeedsAttentionNotifier
from order_domain.orders import OrderRepository
from order_domain.pacing import Pacer, paced, run_bounded, sweep_budget
from order_domain.ports import Carrier, PaymentProvider, RefundLookup
from order_domain.reconcile import Reconciliation
from order_domain.reconcile_reads import pending_reconciliation
from order_domain.reconcile_sizing import CAPACITY
from order_domain.reconcile_sizing import RESERVE_SECONDS as RESERVE_SECONDS
from order_domain.saga_start import execution_name
from order_domain.settle_poll import SettlementPoll
from order_domain.status import TERMINAL, TRANSITIONS, OrderStatus

STATUS_INDEX = "by-status"
NON_TERMINAL = tuple(s for s in OrderStatus if s not in TERMINAL)
RECONCILED = (OrderStatus.COMPLETED, OrderStatus.COMPENSATED)
#: The sweeper's lease on an order it finishes or parks (order_domain.lease): longer than its own
#: provider lookups and writes for one order, shorter than a sweep interval (5 minutes).
LEASE_HOLDER, LEASE_SECONDS = "sweeper", 120


def cutoff_iso(now: float, stuck_after_seconds: int) -> str:
    """The ``updated_at`` before which a non-terminal order counts as stuck."""
    return clock.iso(now - stuck_after_seconds)


def _query(client: Any, orders_table: str, status: OrderStatus, condition: str, bound: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    pages = client.get_paginator("query").paginate(
        TableName=orders_table,
        IndexName=STATUS_INDEX,
        KeyConditionExpression=f"#s = :s AND {condition}",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":s": {"S": status.value}, ":bound": {"S": bound}},
    )
    for page in pages:
        found.extend(from_item(item) for item in page.get("Items", []))
    return found


def find_stuck(
    orders_table: str, stuck_after_seconds: int, now: float | None = None, *, client: Any
) -> list[dict[str, Any]]:
    """Orders whose status is non-terminal and whose last update is older than the threshold
    (``client``: the orders table's DynamoDB client)."""
    cutoff = cutoff_iso(clock.now() if now is None else now, stuck_after_seconds)
    return [o for s in NON_TERMINAL for o in _query(client, orders_table, s, "updated_at < :bound", cutoff)]


def find_recently_terminal(
    orders_table: str, window_seconds: int, now: float | None = None, *, client: Any
) -> list[dict[str, Any]]:
    """COMPLETED and COMPENSATED orders last updated within the window (the index's keys and correlation ID)."""
    since = clock.iso((clock.now() if now is None else now) - window_seconds)
    return [o for s in RECONCILED for o in _query(client, orders_table, s, "updated_at >= :bound", since)]


def running_execution_names(state_machine_arn: str, *, client: Any) -> set[str]:
    """Names of the state machine's RUNNING executions (one paginated ListExecutions, filtered by AWS:
    https://docs.aws.amazon.com/step-functions/latest/apireference/API_ListExecutions.html)."""
    pages = client.get_paginator("list_executions").paginate(stateMachineArn=state_machine_arn, statusFilter="RUNNING")
    return {e["name"] for page in pages for e in page["executions"]}


def _runs(order_id: str, attempt: int, running: set[str]) -> bool:
    """Whether one of ``running`` is the attempt's execution or one of its repairs."""
    pattern = re.compile(rf"{re.escape(execution_name(order_id, attempt))}(-repair-\d+)?")
    return any(pattern.fullmatch(name) for name in running)


@dataclass
class SweepResult:
    """What one sweep found and did (order IDs)."""

    stuck: list[str] = field(default_factory=list)
    running: list[str] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)
    parked: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)  # changed while the sweeper looked: next sweep
    reconciled: list[str] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)  # no time or capacity left in this invocation
    errors: list[str] = field(default_factory=list)
    settle_polled: list[str] = field(default_factory=list)  # unsettled orders looked at (order_domain.settle_poll)
    settle_parked: list[str] = field(default_factory=list)  # ended orders parked on a late failure


class Sweeper(Reconciliation):
    """Finishes or parks stuck orders and reconciles recently terminal ones (see the module doc)."""

    def __init__(
        self,
        orders: OrderRepository,
        notifier: NeedsAttentionNotifier,
        payments: PaymentProvider,
        carrier: Carrier,
        *,
        state_machine_arn: str,
        stuck_after_seconds: int,
        reconcile_window_seconds: int,
        reconcile_max_orders: int = CAPACITY.reconcile_per_sweep,
        logger: Any,
        stepfunctions: Any,
        reads_per_second: float = CAPACITY.reads_per_second,
        workers: int = 1,
    ) -> None:
        """``stepfunctions``: the Step Functions client (ListExecutions); the orders table is read
        and written with the repository's client. ``reads_per_second``: each provider's lookups (the payment
        provider's charges and refunds together) are paced at this rate; ``workers``: orders reconciled at once
        (the wiring gives HTTPS providers ``CAPACITY.workers``)."""
        self.orders = orders
        self.notifier = notifier
        refunds = payments if isinstance(payments, RefundLookup) else None
        self.pacers = (Pacer(reads_per_second), Pacer(reads_per_second))  # (payment provider, carrier)
        payments, carrier = paced(payments, self.pacers[0]), paced(carrier, self.pacers[1])
        refunds = None if refunds is None else paced(refunds, self.pacers[0])
        self.payments = payments
        self.carrier = carrier
        self.workers = workers
        self.state_machine_arn = state_machine_arn
        self.stuck_after_seconds = stuck_after_seconds
        self.reconcile_window_seconds = reconcile_window_seconds
        self.reconcile_max_orders = reconcile_max_orders
        self.logger = logger
        self.stepfunctions = stepfunctions
        self.settle = SettlementPoll(orders, notifier, refunds, logger=logger)

    def sweep(self, scope: Callable[[str | None], Any], seconds_left: Callable[[], float]) -> SweepResult:
        """One sweep. ``scope(correlation_id)`` is a context manager putting an order's correlation
        ID on the log lines; ``seconds_left()`` is the invocation's remaining time (also the HTTPS lookups'
        retry budget: :func:`order_domain.pacing.sweep_seconds_left`)."""
        with sweep_budget(seconds_left):
            return self._sweep(scope, seconds_left)

    def _sweep(self, scope: Callable[[str | None], Any], seconds_left: Callable[[], float]) -> SweepResult:
        result = SweepResult()
        now = clock.now()
        stuck = find_stuck(self.orders.table_name, self.stuck_after_seconds, now, client=self.orders.client)
        result.stuck = [o["order_id"] for o in stuck]
        running = running_execution_names(self.state_machine_arn, client=self.stepfunctions) if stuck else set()
        for seen in stuck:
            self._each(seen, result, scope, seconds_left, lambda s: self._stuck(s, running, result))
        recent = find_recently_terminal(
            self.orders.table_name, self.reconcile_window_seconds, now, client=self.orders.client
        )
        recent.sort(key=lambda o: str(o.get("updated_at")))  # oldest first: the nearest to leaving the window
        # A filter only: an order with an attempt left is read again, whole, before it is checked.
        pending = pending_reconciliation(
            self.orders.client, self.orders.table_name, [o["order_id"] for o in recent], log=self.logger
        )
        todo = [seen for seen in recent if seen["order_id"] in pending]
        result.deferred += [o["order_id"] for o in todo[self.reconcile_max_orders :]]  # the next sweep's
        run_bounded(  # oldest first: the workers take the orders in this order
            lambda seen: self._each(seen, result, scope, seconds_left, lambda s: self._reconcile(s, result)),
            todo[: self.reconcile_max_orders],
            self.workers,
        )
        polled = self.settle.poll(seconds_left, now)
        result.settle_polled, result.settle_parked = polled.polled, polled.parked
        result.deferred += polled.deferred
        result.errors += polled.errors
        return result

    def _each(
        self,
        seen: dict[str, Any],
        result: SweepResult,
        scope: Callable[[str | None], Any],
        seconds_left: Callable[[], float],
        act: Callable[[dict[str, Any]], None],
    ) -> None:
        order_id = seen["order_id"]
        if seconds_left() < RESERVE_SECONDS:
            result.deferred.append(order_id)
            return
        with scope(seen.get("correlation_id")):
            try:
                act(seen)
            except Exception as exc:  # one order's failure must not hide the others: counted, raised at the end
                result.errors.append(order_id)
                self.logger.exception(
                    "sweeper could not handle order", extra={"order_id": order_id, "error_type": type(exc).__name__}
                )

    # -- stuck orders -----------------------------------------------------------------------------

    def _stuck(self, seen: dict[str, Any], running: set[str], result: SweepResult) -> None:
        order_id, status = seen["order_id"], OrderStatus(seen["status"])
        self.logger.warning(
            "stuck order", extra={"order_id": order_id, "status": status.value, "updated_at": seen.get("updated_at")}
        )
        item = self.orders.find(order_id)
        if item is None or item.get("status") != status.value or item.get("updated_at") != seen.get("updated_at"):
            result.moved.append(order_id)
            return
        attempt = int(item.get("payment_attempt", 1))
        if _runs(order_id, attempt, running):
            result.running.append(order_id)
            self.logger.info("stuck order has a running execution: left to it", extra={"order_id": order_id})
            return
        if lease.held_by_other(item, LEASE_HOLDER) or not lease.acquire(
            self.orders.client,
            self.orders.table_name,
            order_id,
            holder=LEASE_HOLDER,
            seconds=LEASE_SECONDS,
            status=status.value,
            updated_at=str(item["updated_at"]),
        ):
            # An operator's repair holds the order (its execution may not be listed yet:
            # ListExecutions is eventually consistent), or the order moved: not ours to touch.
            result.moved.append(order_id)
            self.logger.info("order is leased to another actor: left alone", extra={"order_id": order_id})
            return
        why = f"stuck in {status.value} for more than {self.stuck_after_seconds} s with no execution running"
        if status == OrderStatus.SHIPPED or intents.ship_unrecorded(item, attempt):
            findings = self._completed_findings(order_id, attempt, item)
            if not findings:
                self._move(item, OrderStatus.COMPLETED, result.finished, result)
                return
            why += "; the providers say: " + "; ".join(findings)
        self._announce(item, attempt, "OrderStuck", why)
        error = {"Error": "OrderStuck", "Cause": why, "correlation_id": item.get("correlation_id")}
        self._move(item, OrderStatus.NEEDS_ATTENTION, result.parked, result, error=error)

    def _move(
        self,
        item: dict[str, Any],
        to: OrderStatus,
        done: list[str],
        result: SweepResult,
        error: dict[str, Any] | None = None,
    ) -> None:
        """``to``, only if the order is still in the status and ``updated_at`` the sweeper read."""
        order_id, status = item["order_id"], OrderStatus(item["status"])
        assert to in TRANSITIONS[status], f"{status} -> {to}"
        attempt = int(item.get("payment_attempt", 1))
        now = clock.iso()
        shipped = (status, to) == (OrderStatus.PAYMENT_CHARGED, OrderStatus.COMPLETED)  # SHIPPED too, as ShipOrder's
        moves = [OrderStatus.SHIPPED, to] if shipped else [to]
        values: dict[str, Any] = {
            ":to": to.value,
            ":from": status.value,
            ":now": now,
            ":seen": item["updated_at"],
            ":entry": [{"status": s.value, "at": now, "attempt": attempt, "by": "sweeper"} for s in moves],
            ":attempt": attempt,
        }
        update = "SET #s = :to, updated_at = :now, history = list_append(history, :entry)"
        if error is not None:
            update += ", last_error = :err"
            values[":err"] = error
        update += " REMOVE #l"
        values[":me"] = LEASE_HOLDER
        first = "attribute_not_exists(payment_attempt) OR " if attempt == 1 else ""
        try:
            self.orders.client.update_item(
                TableName=self.orders.table_name,
                Key=to_item({"order_id": order_id}),
                UpdateExpression=update,
                ConditionExpression=(
                    f"#s = :from AND updated_at = :seen AND ({first}payment_attempt = :attempt) AND #l.#h = :me"
                ),
                ExpressionAttributeNames={"#s": "status", "#l": lease.LEASE, "#h": "holder"},
                ExpressionAttributeValues=to_item(values),
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise
            result.moved.append(order_id)
            self.logger.info("order moved while the sweeper looked: next sweep", extra={"order_id": order_id})
            return
        done.append(order_id)
        self.logger.warning(
            f"sweeper moved order to {to.value}", extra={"order_id": order_id, "from_status": status.value}
        )

    def _announce(self, item: dict[str, Any], attempt: int, error: str, why: str) -> None:
        """The needs-attention message for one attempt of the order, from the sweeper."""
        self.notifier.notify(
            item["order_id"],
            payment_attempt=attempt,
            correlation_id=item.get("correlation_id"),
            reason=why,
            error={"Error": error, "Cause": why},
            source=SWEEPER,
        )
