"""The saga's outcome written by its last step's own function (decision 0024): ShipOrder records
COMPLETED once the parcel is booked, the last compensation (ReleaseInventory, told by the definition's
``record_outcome``) records COMPENSATED once the stock is back. One state transition less per order
than a separate recorder state; the recorder state stays, for the error path only.

Each recorder runs after the step's action on every invocation (a duplicate's cached result too:
:func:`lambda_resilience.step.step_handler`'s ``record``). Anything but "moved" or "already" (the
write failed, or another actor moved the order meanwhile) raises, and the handler names it
``EffectDoneOutcomeNotWritten``: the definition then records the outcome with its own task (retries,
then the park), and never compensates an effect that is done. Except a write that finds the order parked
for its attempt (a retry after a lost answer, once a provider's late change or the sweeper parked the order):
:class:`OrderParked`, so the execution ends FAILED in ``AlreadyParked`` (decision 0029), not SUCCEEDED through
the recorder task's failed condition (``OutcomeAlreadyRecorded``) with the order parked.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from lambda_resilience.aws import error_code, from_item, to_item
from lambda_resilience.correlation import current_correlation_id
from lambda_resilience.exceptions import EffectDoneOutcomeNotWritten
from lambda_resilience.step import OutcomeRecorder
from order_domain import clock
from order_domain.errors import OrderParked
from order_domain.orders import OrderRepository, parked, refused_move
from order_domain.status import OrderStatus


def completed_by_ship(orders: OrderRepository) -> OutcomeRecorder:
    """ShipOrder's recorder: PAYMENT_CHARGED -> COMPLETED (:func:`complete_shipped`)."""

    def record(payload: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
        order_id, attempt = payload["order_id"], payload["payment_attempt"]
        if complete_shipped(orders, order_id, attempt, current_correlation_id()) == "stale":
            _refuse_if_parked(orders, order_id, attempt)
            raise EffectDoneOutcomeNotWritten(f"order {order_id}: shipped, but the order moved on (not COMPLETED)")
        return {**result, "outcome": OrderStatus.COMPLETED.value}

    return record


def compensated_by_release(orders: OrderRepository) -> OutcomeRecorder:
    """The last compensation's recorder: COMPENSATING -> COMPENSATED when the input says
    ``record_outcome: COMPENSATED``; nothing for the copy that runs before the park."""

    def record(payload: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
        if payload.get("record_outcome") != OrderStatus.COMPENSATED.value:
            return result
        order_id, attempt = payload["order_id"], payload["payment_attempt"]
        cid = current_correlation_id()
        if orders.transition(order_id, OrderStatus.COMPENSATED, attempt=attempt, correlation_id=cid) == "stale":
            _refuse_if_parked(orders, order_id, attempt)
            raise EffectDoneOutcomeNotWritten(f"order {order_id}: released, but the order is not COMPENSATING")
        return {**result, "outcome": OrderStatus.COMPENSATED.value}

    return record


def _refuse_if_parked(orders: OrderRepository, order_id: str, attempt: int) -> None:
    """The outcome write found the order parked for this attempt after the effect (module doc): the park stands
    (announced when it was made); the execution ends in ``AlreadyParked``, the effect kept."""
    if parked(orders, order_id, attempt):
        raise OrderParked(f"order {order_id}: attempt {attempt} was parked after its last step's effect")


def complete_shipped(orders: OrderRepository, order_id: str, attempt: int, correlation_id: str | None) -> str:
    """ShipOrder's outcome write (decision 0024): PAYMENT_CHARGED -> COMPLETED in one conditional
    UpdateItem whose history gets both SHIPPED and COMPLETED (with the correlation ID); an order
    already SHIPPED (an execution of the definition before 0024) moves on as
    :meth:`OrderRepository.transition` does. Returns ``"moved"``, ``"already"`` or ``"stale"``."""
    now = clock.iso()
    completed: dict[str, Any] = {"status": OrderStatus.COMPLETED.value, "at": now, "attempt": attempt}
    if correlation_id:
        completed["correlation_id"] = correlation_id
    shipped = {"status": OrderStatus.SHIPPED.value, "at": now, "attempt": attempt}
    first = "attribute_not_exists(payment_attempt) OR " if attempt == 1 else ""
    try:
        orders.client.update_item(
            TableName=orders.table_name,
            Key=to_item({"order_id": order_id}),
            UpdateExpression="SET #s = :to, #u = :now, #h = list_append(#h, :entry)",
            ConditionExpression=f"attribute_exists(order_id) AND #s = :from AND ({first}payment_attempt = :attempt)",
            ExpressionAttributeNames={"#s": "status", "#u": "updated_at", "#h": "history"},
            ExpressionAttributeValues=to_item(
                {
                    ":to": OrderStatus.COMPLETED.value,
                    ":from": OrderStatus.PAYMENT_CHARGED.value,
                    ":now": now,
                    ":entry": [shipped, completed],
                    ":attempt": attempt,
                }
            ),
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
        return "moved"
    except ClientError as exc:
        if error_code(exc) != "ConditionalCheckFailedException":
            raise
        old = from_item(exc.response.get("Item") or {})
        if old.get("status") == OrderStatus.SHIPPED.value and int(old.get("payment_attempt", 1)) == attempt:
            return orders.transition(order_id, OrderStatus.COMPLETED, attempt=attempt, correlation_id=correlation_id)
        return refused_move(exc, order_id, OrderStatus.COMPLETED, attempt)
