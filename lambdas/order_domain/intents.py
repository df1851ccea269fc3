"""Intent before effect (docs/decisions/0028): before a step sends an effect (reserve, charge, ship,
refund, cancel) the order item records the intent for that payment attempt, with its time, in one
conditional UpdateItem; only then does the step call the provider.

``intents = {"<operation>#attempt-<N>": {"at", "correlation_id"}}`` on the order item; the first
time is kept (``if_not_exists``): a provider's key window runs from the first request sent with
the key. The write is also the step's read of the order (the item as it was, ``ALL_OLD``, with the
intent applied) and its stage check, atomic with the record: a forward step refuses an order outside
its own stage (COMPENSATING included) before any effect. An intent the item did not hold before is the
operation's first call (``on_first``): the provider outage alarms count operations by it (0033).

A provider's "no record" by key is the truth only while the key is inside the provider's window.
Once an intent is older than :data:`TRUSTED_FOR_SECONDS`, "no record" plus the intent is an
unknown outcome (:func:`unverifiable`): the step looks the key up and, finding nothing, raises
``ProviderForgot`` (the saga parks the order), never "nothing happened".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from botocore.exceptions import ClientError

from lambda_resilience.aws import error_code, from_item, to_item
from lambda_resilience.correlation import current_correlation_id
from order_domain import clock
from order_domain.errors import OrderParked, StaleAttempt, UnknownOrder
from order_domain.orders import OrderRepository, compensating
from order_domain.status import TERMINAL, OrderStatus

INTENTS = "intents"
#: How long a provider's "no record" by key is trusted after our first request with that key. The
#: shortest documented window among the processors docs/providers.md names: Stripe prunes keys once
#: they are at least 24 hours old (https://docs.stripe.com/api/idempotent_requests), Checkout.com
#: keys expire after 24 hours (https://www.checkout.com/docs/payments/manage-payments/idempotency).
#: One hour less, for clocks that disagree: past it, "no record" proves nothing.
TRUSTED_FOR_SECONDS = 23 * 3600
#: The statuses each forward step acts in: the one it moves the order from, and the later forward ones
#: (a rerun of a step that is done, e.g. a repair's redrive after our idempotency records expired,
#: answers from its record). Anything else is refused before any effect: an order before the step's
#: stage, being undone (COMPENSATING), ended, or owned by a newer attempt.
_CHARGED_ON = (OrderStatus.PAYMENT_CHARGED, OrderStatus.SHIPPED)  # SHIPPED: an execution from before 0024
FORWARD_STAGES: dict[str, tuple[OrderStatus, ...]] = {
    "reserve-inventory": (OrderStatus.RECEIVED, OrderStatus.INVENTORY_RESERVED, *_CHARGED_ON),
    "charge-payment": (OrderStatus.INVENTORY_RESERVED, *_CHARGED_ON),
    "ship-order": _CHARGED_ON,
}
#: What the sweeper says of a ship intended before the carrier's key window that the carrier does not know.
UNKNOWN_SHIPMENT = (
    "a ship-order intent older than the carrier's key window and no shipment by its key: whether a parcel "
    "left is unknown (ask the carrier before any compensation)"
)
#: Compensations record their intent once the order is COMPENSATING (``orders.compensating``).
COMPENSATION_STAGE = (OrderStatus.COMPENSATING,)


def intent_key(operation: str, attempt: int) -> str:
    return f"{operation}#attempt-{attempt}"


def intent_of(item: dict[str, Any], operation: str, attempt: int) -> dict[str, Any] | None:
    """The intent the order item records for ``operation`` of ``attempt`` (None: never sent)."""
    found = (item.get(INTENTS) or {}).get(intent_key(operation, attempt))
    return found if isinstance(found, dict) else None


def ship_unrecorded(item: dict[str, Any], attempt: int) -> bool:
    """A PAYMENT_CHARGED order whose ship intent is recorded: ShipOrder may have booked the parcel and
    failed to write COMPLETED (the sweeper asks the carrier before it parks such an order)."""
    return (
        item.get("status") == OrderStatus.PAYMENT_CHARGED.value and intent_of(item, "ship-order", attempt) is not None
    )


def moved_on(orders: OrderRepository, order_id: str, attempt: int, operation: str) -> bool:
    """After a forward step's status write answered "stale": whether another actor moved the order out
    of the step's stage (True: the step must fail), rather than the saga's own later steps (a rerun)."""
    item = orders.find(order_id)
    stage = {s.value for s in FORWARD_STAGES[operation]}
    return item is None or int(item.get("payment_attempt", 1)) != attempt or item.get("status") not in stage


def unverifiable(item: dict[str, Any], operation: str, attempt: int, now: float | None = None) -> bool:
    """Whether ``operation`` of ``attempt`` was intended longer ago than the providers keep keys: then
    their "no record" is no proof that nothing happened."""
    intent = intent_of(item, operation, attempt)
    if intent is None:
        return False
    trusted_since = clock.iso((clock.now() if now is None else now) - TRUSTED_FOR_SECONDS)
    return str(intent.get("at", "")) < trusted_since


def record(
    orders: OrderRepository,
    order_id: str,
    attempt: int,
    operation: str,
    stage: Iterable[OrderStatus],
    on_first: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Record the intent for ``operation`` of ``attempt`` while the order is in one of ``stage``; return
    the order item as stored afterwards. Raises :class:`UnknownOrder`, :class:`OrderParked` (parked for an
    operator), or :class:`StaleAttempt` when a newer attempt replaced this one or the order is outside
    ``stage`` (nothing is written then). ``on_first()`` runs when the item held no such intent before this
    write: the operation's first call (a retry, a rerun or a redrive finds its intent recorded)."""
    statuses = sorted(s.value for s in stage)
    intent: dict[str, Any] = {"at": clock.iso()}
    cid = current_correlation_id()
    if cid:
        intent["correlation_id"] = cid
    values: dict[str, Any] = {":intent": intent, ":attempt": attempt}
    values.update({f":s{i}": s for i, s in enumerate(statuses)})
    first = "attribute_not_exists(payment_attempt) OR " if attempt == 1 else ""
    request = {
        "TableName": orders.table_name,
        "Key": to_item({"order_id": order_id}),
        "UpdateExpression": "SET #i.#k = if_not_exists(#i.#k, :intent)",
        "ConditionExpression": (
            f"attribute_exists(#i) AND ({first}payment_attempt = :attempt) "
            f"AND #s IN ({', '.join(f':s{i}' for i in range(len(statuses)))})"
        ),
        "ExpressionAttributeNames": {"#i": INTENTS, "#k": intent_key(operation, attempt), "#s": "status"},
        "ExpressionAttributeValues": to_item(values),
        "ReturnValues": "ALL_OLD",
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }
    for _ in range(2):
        try:
            item = from_item(orders.client.update_item(**request)["Attributes"])
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise
            old = from_item(exc.response.get("Item") or {})
            _refused(old, order_id, attempt, operation, statuses)
            _add_intents_map(orders, order_id)  # an order recorded before intents existed: once
            continue
        recorded = item.setdefault(INTENTS, {})
        if intent_key(operation, attempt) not in recorded:
            recorded[intent_key(operation, attempt)] = intent  # as stored: if_not_exists wrote it
            if on_first is not None:
                on_first()
        return item
    raise StaleAttempt(f"order {order_id}: attempt {attempt} changed while recording its {operation} intent")


def compensation_intent(
    orders: OrderRepository,
    order_id: str,
    attempt: int,
    payload: dict[str, Any],
    operation: str,
    on_first: Callable[[], None] | None = None,
) -> dict[str, Any] | None:
    """Move the order to COMPENSATING (:func:`~order_domain.orders.compensating`) and record the
    compensation's intent (decision 0028; ``on_first`` as in :func:`record`); the order item as stored, or
    None when the compensation must do nothing (terminal or replaced). A parked order no operator asked
    about raises :class:`OrderParked` (:func:`~order_domain.orders.compensating`)."""
    if compensating(orders, order_id, attempt, payload) == "stale":
        return None
    try:
        return record(orders, order_id, attempt, operation, COMPENSATION_STAGE, on_first)
    except StaleAttempt:  # another actor finished the order between the two writes
        return None


def _refused(old: dict[str, Any], order_id: str, attempt: int, operation: str, statuses: list[str]) -> None:
    """Raise why the intent write was refused, from the item as it was; return if only the map is missing."""
    if not old:
        raise UnknownOrder(f"order {order_id} not found")
    current = int(old.get("payment_attempt", 1))
    if current != attempt:
        raise StaleAttempt(f"order {order_id}: attempt {attempt} is not the order's current attempt ({current})")
    if old.get("status") == OrderStatus.NEEDS_ATTENTION.value:
        raise OrderParked(f"order {order_id}: attempt {attempt} is parked for an operator; {operation} does nothing")
    if old.get("status") in {s.value for s in TERMINAL}:
        raise StaleAttempt(f"order {order_id}: attempt {attempt} already ended {old.get('status')}")
    if old.get("status") not in statuses:
        raise StaleAttempt(
            f"order {order_id}: attempt {attempt} is {old.get('status')}; {operation} acts in {', '.join(statuses)}"
        )


def _add_intents_map(orders: OrderRepository, order_id: str) -> None:
    try:
        orders.client.update_item(
            TableName=orders.table_name,
            Key=to_item({"order_id": order_id}),
            UpdateExpression="SET #i = :empty",
            ConditionExpression="attribute_exists(order_id) AND attribute_not_exists(#i)",
            ExpressionAttributeNames={"#i": INTENTS},
            ExpressionAttributeValues=to_item({":empty": {}}),
        )
    except ClientError as exc:
        if error_code(exc) != "ConditionalCheckFailedException":
            raise
