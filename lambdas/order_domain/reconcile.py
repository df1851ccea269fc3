"""Reconciliation of terminal orders against the providers' records (the sweeper's second half; module doc:
:mod:`order_domain.sweeper`), and the provider findings the stuck-order half shares."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from lambda_resilience.aws import error_code, to_item
from lambda_resilience.idempotency import business_key
from order_domain import clock, intents
from order_domain.orders import OrderRepository
from order_domain.ports import AUTHORIZED, CAPTURED, SHIPPED, Carrier, PaymentProvider
from order_domain.reconcile_reads import attempts_of, reconciled_attempts
from order_domain.status import OrderStatus

if TYPE_CHECKING:
    from order_domain.sweeper import SweepResult

#: The business keys the saga's steps give the providers (order_domain.payments / shipping).
CHARGE, SHIP = "charge-payment", "ship-order"


class Reconciliation:
    """What the :class:`~order_domain.sweeper.Sweeper` asks the providers, and its reconciliation of terminal
    orders (a mixin: the sweeper holds the repository, the providers, the logger and ``_announce``)."""

    orders: OrderRepository
    payments: PaymentProvider
    carrier: Carrier
    logger: Any

    def _announce(self, item: dict[str, Any], attempt: int, error: str, why: str) -> None:
        raise NotImplementedError

    # -- provider records ---------------------------------------------------------------------------

    def _completed_findings(self, order_id: str, attempt: int, item: dict[str, Any] | None = None) -> list[str]:
        """What disagrees with a COMPLETED order at the providers (empty: captured and shipped; ``item``: intents)."""
        findings = []
        charge = self.payments.find_charge(business_key(order_id, CHARGE, attempt))
        if charge is None or charge.status != CAPTURED or charge.refunded:
            seen = "none" if charge is None else f"{charge.status}{', refunded' if charge.refunded else ''}"
            findings.append(f"no capture (charge: {seen})")
        shipment = self.carrier.find_shipment(business_key(order_id, SHIP, attempt))
        if shipment is None and item is not None and intents.unverifiable(item, SHIP, attempt):
            findings.append(intents.UNKNOWN_SHIPMENT)
        elif shipment is None or shipment.status != SHIPPED:
            findings.append(f"no live shipment (shipment: {'none' if shipment is None else shipment.status})")
        return findings

    def _compensated_findings(self, order_id: str, attempt: int) -> list[str]:
        """What disagrees with a COMPENSATED order at the providers (empty: nothing held, nothing shipped)."""
        findings = []
        charge = self.payments.find_charge(business_key(order_id, CHARGE, attempt))
        if charge is not None and charge.outstanding_cents > 0:
            findings.append(f"{charge.outstanding_cents} cents still captured (charge: {charge.status})")
        elif charge is not None and charge.status == AUTHORIZED and not charge.refunded:
            findings.append("an authorisation still held")
        shipment = self.carrier.find_shipment(business_key(order_id, SHIP, attempt))
        if shipment is not None and shipment.status == SHIPPED:
            findings.append("a live shipment")
        return findings

    # -- reconciliation -----------------------------------------------------------------------------

    def _reconcile(self, seen: dict[str, Any], result: SweepResult) -> None:
        """Check every payment attempt of the order not checked yet: the current one by its status,
        the earlier ones as COMPENSATED (a new attempt is accepted only after one)."""
        order_id = seen["order_id"]
        item = self.orders.find(order_id)
        if item is None or item.get("status") != seen.get("status"):
            return
        status, current = OrderStatus(item["status"]), int(item.get("payment_attempt", 1))
        pending = [a for a in attempts_of(item) if a not in reconciled_attempts(item)]
        if not pending:
            return
        findings_by_attempt: dict[str, list[str]] = {}
        for attempt in pending:
            ended = status if attempt == current else OrderStatus.COMPENSATED
            findings = self._findings(order_id, attempt, ended)
            findings_by_attempt[str(attempt)] = findings
            if findings:
                self._announce_mismatch(item, attempt, ended, findings)
        if any(findings_by_attempt.values()):
            result.mismatched.append(order_id)
        record = {"at": clock.iso(), "attempt": current, "findings": findings_by_attempt.get(str(current), [])}
        self._mark_reconciled(order_id, status, current, pending, {**record, "by_attempt": findings_by_attempt})
        result.reconciled.append(order_id)

    def _findings(self, order_id: str, attempt: int, ended: OrderStatus) -> list[str]:
        if ended == OrderStatus.COMPLETED:
            return self._completed_findings(order_id, attempt)
        return self._compensated_findings(order_id, attempt)

    def _announce_mismatch(self, item: dict[str, Any], attempt: int, ended: OrderStatus, findings: list[str]) -> None:
        why = f"attempt {attempt} {ended.value} but the providers say: " + "; ".join(findings)
        extra = {"order_id": item["order_id"], "payment_attempt": attempt}
        self.logger.error("side effects disagree with the order's status", extra=extra)
        self._announce(item, attempt, "SideEffectMismatch", why)

    def _mark_reconciled(
        self, order_id: str, status: OrderStatus, current: int, done: list[int], record: dict[str, Any]
    ) -> None:
        """Record the checked attempts (``reconciled_attempts``), only while the order is still in the
        status and attempt the sweeper checked: a new attempt is never marked by an old check."""
        first = "attribute_not_exists(payment_attempt) OR " if current == 1 else ""
        try:
            self.orders.client.update_item(
                TableName=self.orders.table_name,
                Key=to_item({"order_id": order_id}),
                UpdateExpression=(
                    "SET reconciled = :r, "
                    "reconciled_attempts = list_append(if_not_exists(reconciled_attempts, :none), :d)"
                ),
                ConditionExpression=f"#s = :s AND ({first}payment_attempt = :n)",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues=to_item(
                    {":r": record, ":s": status.value, ":n": current, ":none": [], ":d": done}
                ),
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise
