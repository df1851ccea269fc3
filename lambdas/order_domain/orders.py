"""The orders table: one item per order, status changes as conditional writes."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from lambda_resilience.aws import error_code, from_item, to_item
from lambda_resilience.exceptions import PayloadMismatch
from order_domain import clock
from order_domain.errors import (
    AttemptInProgress,
    AttemptMismatch,
    InvalidTransition,
    OrderClosed,
    OrderIdTaken,
    OrderParked,
    StaleAttempt,
    UnknownOrder,
)
from order_domain.status import TERMINAL, OrderStatus, predecessors, sources_of

#: What :meth:`OrderRepository.create` did with a message.
CREATED = "created"  # a new order (any attempt number)
DUPLICATE = "duplicate"  # the same attempt with the same content: already recorded
NEW_ATTEMPT = "new_attempt"  # attempt N+1 after attempt N was compensated (e.g. declined)
SUPERSEDED = "superseded"  # an older attempt than the order's current one: nothing to do

#: Statuses after which a new payment attempt is accepted. COMPLETED orders are closed, and a
#: NEEDS_ATTENTION order waits for an operator's repair (it may still hold money or stock).
NEW_ATTEMPT_AFTER = frozenset({OrderStatus.COMPENSATED})
#: What a new payment attempt may change: it retries the payment of the same order (decision 0018,
#: "Trust model"); anything else under the same order ID is :class:`AttemptMismatch`.
ATTEMPT_MAY_CHANGE = frozenset({"payment_token", "payment_attempt"})


def attempt_of(order: dict[str, Any]) -> int:
    """The order message's payment attempt (1 when absent)."""
    return int(order.get("payment_attempt", 1))


class OrderRepository:
    """Orders keyed by ``order_id``; ``status`` only moves along :data:`TRANSITIONS`.

    The item holds the current payment attempt's order (``order``, ``payment_attempt``), the
    status history of every attempt (each entry names its attempt) and ``attempts``: when each
    attempt arrived, with which correlation ID, and how the previous one ended.
    """

    def __init__(self, table_name: str, *, client: Any) -> None:
        """``client``: the DynamoDB client (built by the composition root, :mod:`order_domain.wiring`)."""
        self.table_name = table_name
        self.client = client

    def create(self, order: dict[str, Any], correlation_id: str, *, caller: str | None = None) -> str:
        """Record an order message; returns :data:`CREATED`, :data:`DUPLICATE`, :data:`NEW_ATTEMPT` or
        :data:`SUPERSEDED`. ``caller``: the IAM principal the order API saw (the order's ``owner``), or None.

        Raises :class:`OrderIdTaken` (the order ID belongs to another caller), :class:`PayloadMismatch`
        (same attempt, different content), :class:`AttemptMismatch` (a new attempt changing more than
        the payment token), :class:`OrderClosed` (a new attempt for a completed or parked order) or
        :class:`AttemptInProgress` (a new attempt while the previous one still runs: transient, the
        message comes back later).
        """
        now = _now()
        attempt = attempt_of(order)
        item = {
            "order_id": order["order_id"],
            "status": OrderStatus.RECEIVED.value,
            "payment_attempt": attempt,
            "correlation_id": correlation_id,
            "order": order,
            "created_at": now,
            "updated_at": now,
            "history": [{"status": OrderStatus.RECEIVED.value, "at": now, "attempt": attempt}],
            "attempts": [{"attempt": attempt, "received_at": now, "correlation_id": correlation_id}],
            "intents": {},  # order_domain.intents: each effect's intent, recorded before it is sent
        }
        if caller:
            item["owner"] = caller
        try:
            self.client.put_item(
                TableName=self.table_name,
                Item=to_item(item),
                ConditionExpression="attribute_not_exists(order_id)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
            return CREATED
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise
            existing = from_item(exc.response.get("Item") or {}) or self.get(order["order_id"])
        if existing.get("owner") != caller:
            raise OrderIdTaken(f"order {order['order_id']} belongs to another caller; attempt {attempt} is refused")
        current = int(existing.get("payment_attempt", 1))
        if attempt == current:
            if existing.get("order") != order:
                raise PayloadMismatch(
                    f"order {order['order_id']} attempt {attempt} already exists with different content"
                )
            return DUPLICATE
        if attempt < current:
            return SUPERSEDED
        changed = sorted(
            k
            for k in (set(order) | set(existing["order"])) - ATTEMPT_MAY_CHANGE
            if order.get(k) != existing["order"].get(k)
        )
        if changed:
            raise AttemptMismatch(
                f"order {order['order_id']} attempt {attempt}: only payment_token may change between attempts; "
                f"{', '.join(changed)} differ"
            )
        return self._new_attempt(order, correlation_id, existing)

    def record_refusal(self, order_id: str, rule: str, *, caller: str | None, idempotency_key: str | None) -> None:
        """Keep on the order the last refused message (its rule, caller and ``Idempotency-Key``) and
        the callers refused, so that ``GET /orders/{id}`` answers each its conflict. No order: nothing."""
        refusal = {"rule": rule, "caller": caller, "idempotency_key": idempotency_key, "at": _now()}
        update = "SET last_refusal = :r"
        values: dict[str, Any] = {":r": {k: v for k, v in refusal.items() if v is not None}}
        if caller:
            update += " ADD refused_callers :c"
            values[":c"] = {caller}
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key=to_item({"order_id": order_id}),
                UpdateExpression=update,
                ConditionExpression="attribute_exists(order_id)",
                ExpressionAttributeValues=to_item(values),
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise

    def _new_attempt(self, order: dict[str, Any], correlation_id: str, existing: dict[str, Any]) -> str:
        order_id, attempt = order["order_id"], attempt_of(order)
        previous, status = int(existing.get("payment_attempt", 1)), OrderStatus(existing["status"])
        if status not in NEW_ATTEMPT_AFTER:
            if status in TERMINAL:
                raise OrderClosed(
                    f"order {order_id} is {status.value} (attempt {previous}); attempt {attempt} is refused"
                )
            raise AttemptInProgress(f"order {order_id}: attempt {previous} is still {status.value}; retry later")
        now = _now()
        entry = {
            "attempt": attempt,
            "received_at": now,
            "correlation_id": correlation_id,
            "previous_outcome": status.value,
            "previous_error": existing.get("last_error"),
        }
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key=to_item({"order_id": order_id}),
                UpdateExpression=(
                    "SET #o = :order, payment_attempt = :n, #s = :received, correlation_id = :cid, updated_at = :now, "
                    "history = list_append(history, :h), attempts = list_append(if_not_exists(attempts, :none), :a) "
                    "REMOVE last_error"
                ),
                ConditionExpression="payment_attempt = :prev AND #s = :was",
                ExpressionAttributeNames={"#o": "order", "#s": "status"},
                ExpressionAttributeValues=to_item(
                    {
                        ":order": order,
                        ":n": attempt,
                        ":received": OrderStatus.RECEIVED.value,
                        ":cid": correlation_id,
                        ":now": now,
                        ":h": [{"status": OrderStatus.RECEIVED.value, "at": now, "attempt": attempt}],
                        ":none": [],
                        ":a": [{k: v for k, v in entry.items() if v is not None}],
                        ":prev": previous,
                        ":was": status.value,
                    }
                ),
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise
            # Another message changed the order between our read and write: decide again later.
            raise AttemptInProgress(f"order {order_id} changed while recording attempt {attempt}; retry") from exc
        return NEW_ATTEMPT

    def find(self, order_id: str) -> dict[str, Any] | None:
        """The order item, or None."""
        response = self.client.get_item(
            TableName=self.table_name, Key=to_item({"order_id": order_id}), ConsistentRead=True
        )
        return from_item(response["Item"]) if "Item" in response else None

    def get(self, order_id: str) -> dict[str, Any]:
        """The order item; :class:`UnknownOrder` if absent."""
        found = self.find(order_id)
        if found is None:
            raise UnknownOrder(f"order {order_id} not found")
        return found

    def for_step(self, order_id: str, attempt: int) -> dict[str, Any]:
        """The order message a forward step works on (see :meth:`step_item`)."""
        return dict(self.step_item(order_id, attempt)["order"])

    def step_item(self, order_id: str, attempt: int) -> dict[str, Any]:
        """The order item a forward step works on: :class:`UnknownOrder` if the table does not
        know the order, :class:`StaleAttempt` if a newer payment attempt replaced this one or if
        the attempt already ended (COMPLETED, COMPENSATED, or parked NEEDS_ATTENTION: e.g. the
        sweeper parked an order whose saga never started, and a late redelivery starts it now).
        The saga fails such an execution at once, before any effect (stacks/order_constructs/order_saga.py,
        refused input errors): a parked order moves only through an operator's repair."""
        item = self.get(order_id)
        current = int(item.get("payment_attempt", 1))
        if current != attempt:
            raise StaleAttempt(f"order {order_id}: attempt {attempt} was replaced by attempt {current}")
        if item.get("status") in TERMINAL:
            raise StaleAttempt(f"order {order_id}: attempt {attempt} already ended {item['status']}")
        return item

    def transition(
        self,
        order_id: str,
        to: OrderStatus,
        *,
        attempt: int | None = None,
        error: dict[str, Any] | None = None,
        from_parked: bool = True,
        correlation_id: str | None = None,
    ) -> str:
        """Move the order to ``to`` if allowed; a repeat or a late (backwards) move is a no-op.

        With ``attempt``, only that payment attempt's status moves: a late step of an older
        attempt is ``"stale"``. Returns ``"moved"``, ``"already"`` (already there) or ``"stale"``
        (order is past ``to``). ``from_parked=False``: a parked (NEEDS_ATTENTION) order does not
        move (``"stale"``): only an operator's requested compensation takes it out. Raises
        :class:`InvalidTransition` for a skip (e.g. RECEIVED -> COMPLETED) and :class:`UnknownOrder`
        if the order does not exist. ``correlation_id``: kept on the history entry (the outcomes).
        """
        allowed = sorted(s.value for s in sources_of(to) if from_parked or s != OrderStatus.NEEDS_ATTENTION)
        now = _now()
        names = {"#s": "status", "#u": "updated_at", "#h": "history"}
        entry: dict[str, Any] = {"status": to.value, "at": now}
        if attempt is not None:
            entry["attempt"] = attempt
        if correlation_id:
            entry["correlation_id"] = correlation_id
        values: dict[str, Any] = {":to": to.value, ":now": now, ":entry": [entry]}
        placeholders = []
        for i, status in enumerate(allowed):
            values[f":f{i}"] = status
            placeholders.append(f":f{i}")
        update = "SET #s = :to, #u = :now, #h = list_append(#h, :entry)"
        if error is not None:
            names["#e"] = "last_error"
            values[":err"] = error
            update += ", #e = :err"
        condition = f"attribute_exists(order_id) AND #s IN ({', '.join(placeholders)})"
        if attempt is not None:
            values[":attempt"] = attempt
            # Items written before payment attempts existed have no attribute: they are attempt 1.
            first = "attribute_not_exists(payment_attempt) OR " if attempt == 1 else ""
            condition += f" AND ({first}payment_attempt = :attempt)"
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key=to_item({"order_id": order_id}),
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=to_item(values),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
            return "moved"
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise
            return refused_move(exc, order_id, to, attempt)


def refused_move(exc: ClientError, order_id: str, to: OrderStatus, attempt: int | None) -> str:
    """Why :meth:`OrderRepository.transition`'s condition failed, from the item as it was (``ALL_OLD``):
    ``"stale"``, ``"already"``, or raised (unknown order, unrecorded attempt, a skip)."""
    old = exc.response.get("Item")
    if not old:
        raise UnknownOrder(f"order {order_id} not found") from exc
    old_item = from_item(old)
    current = OrderStatus(old_item["status"])
    current_attempt = int(old_item.get("payment_attempt", 1))
    if attempt is not None and current_attempt > attempt:
        return "stale"  # a newer payment attempt owns the order now
    if attempt is not None and current_attempt < attempt:
        raise StaleAttempt(f"order {order_id}: attempt {attempt} is not recorded (current {current_attempt})") from exc
    if current == to:
        return "already"
    if current in TERMINAL or to in predecessors(current):
        return "stale"
    raise InvalidTransition(f"order {order_id}: {current.value} -> {to.value} is not allowed") from exc


def compensating(orders: OrderRepository, order_id: str, attempt: int, payload: dict[str, Any]) -> str:
    """Move the order to COMPENSATING for a compensation step: ``"stale"`` (do nothing) when the
    order is terminal (COMPLETED, COMPENSATED) or a newer attempt owns it. A parked order no operator
    asked to compensate (``"compensate": true``) raises :class:`OrderParked`: a redrive or a late
    duplicate never refunds a parked order by itself, and its execution must not end as if it had
    (decision 0029). The order is read again on that rare path only."""
    requested = payload.get("compensate") is True
    moved = orders.transition(order_id, OrderStatus.COMPENSATING, attempt=attempt, from_parked=requested)
    if moved == "stale" and not requested and parked(orders, order_id, attempt):
        raise OrderParked(f"order {order_id}: attempt {attempt} is parked for an operator; nobody asked to undo it")
    return moved


def parked(orders: OrderRepository, order_id: str, attempt: int) -> bool:
    """Whether ``attempt`` of the order is parked for an operator (NEEDS_ATTENTION) now: one consistent read, on
    the rare path of a move that was refused."""
    item = orders.find(order_id) or {}
    return item.get("status") == OrderStatus.NEEDS_ATTENTION.value and int(item.get("payment_attempt", 1)) == attempt


def _now() -> str:
    return clock.iso()
