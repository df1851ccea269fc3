"""Every actor of the exploration, as one method each: customers (orders, new payment attempts), intake
redeliveries and DLQ replays, the saga's executions (one Task per call, with a fault), Step Functions
(time-outs, Redrive), the sweeper, operators (``ops repair``), the providers (keys forgotten, late
refund failures) and time (clock jumps, idempotency records expiring).

The executions are the model's (saga_model.Execution); what the domain sees of them goes through the
dispatcher: StartExecution reaches moto (its name rule: ExecutionAlreadyExists) and registers the
execution here; ListExecutions and DescribeExecution are answered from the model, so the sweeper and
``ops repair`` see exactly the executions that run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from lambda_resilience.aws import to_item
from lambda_resilience.correlation import correlation_scope, new_correlation_id
from order_domain import wiring
from order_domain.intake import IntakeService
from order_domain.logs import get_logger
from order_domain.saga_start import SagaStarter
from tests.explore.saga_model import MARKS, Execution
from tests.explore.world import (
    IDEMPOTENCY,
    LEDGER,
    NEEDS_ATTENTION_URL,
    ORDERS,
    STATE_MACHINE_ARN,
    World,
)
from tests.handlers.conftest import Died

#: Stripe keeps an idempotency key at least 24 hours (https://docs.stripe.com/api/idempotent_requests).
PROVIDER_KEY_SECONDS = 24 * 3600
#: The stack's idempotency TTL (order_domain.settings.DEFAULT_IDEMPOTENCY_TTL_SECONDS: 15 days); DynamoDB
#: deletes an expired item within a few days (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/howitworks-ttl.html).
IDEMPOTENCY_TTL_SECONDS = 15 * 24 * 3600
#: Step Functions keeps a closed execution redrivable for 14 days
#: (https://docs.aws.amazon.com/step-functions/latest/dg/redrive-executions.html).
REDRIVE_WINDOW_SECONDS = 14 * 24 * 3600
ADDRESS = {"name": "Ada Lovelace", "line1": "1 Analytical Way", "city": "London", "postcode": "N1 1AA"}
#: Order kinds: (token, sku, country); "valid" ones are the sales that must not be lost.
KINDS = {
    "valid": ("tok_visa", "SKU-A", "GB"),
    "handed_over": ("tok_visa", "SKU-B", "XH"),
    "declined": ("tok_decline", "SKU-A", "GB"),
    "out_of_stock": ("tok_visa", "SKU-NONE", "GB"),
    "undeliverable": ("tok_visa", "SKU-A", "ZZ"),
    "partial": ("tok_partial", "SKU-A", "GB"),
}
VALID = frozenset({"valid", "handed_over"})
FAULTS = ("none", "answer_lost", "status_write", "crash_after_effect", "crash_before_effect", "outage")


@dataclass
class PlacedOrder:
    order_id: str
    kind: str
    attempt: int = 1
    #: Why a lost sale would be excused: an operator asked to compensate it.
    operator_compensated: bool = False
    late_events: list[float] = field(default_factory=list)
    #: The payment attempts a provider's late change hit (the ``settled`` invariant's, not ``money``'s).
    late_attempts: set[int] = field(default_factory=set)

    @property
    def valid(self) -> bool:
        return self.kind in VALID


class Actors:
    """The actors on one :class:`World` (see the module doc)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.orders: dict[str, PlacedOrder] = {}
        self.executions: dict[str, Execution] = {}
        self.violations: list[str] = []
        self.op_created: dict[str, float] = {}
        self.idem_created: dict[str, float] = {}
        self.archive: dict[str, dict[str, Any]] = {}
        self.sweeps: list[float] = []
        from ops.target import Target

        #: ``ops repair``'s target: one, so its clients are built once (ops.target.Target caches them).
        self.target = Target(
            outputs={"OrdersTableName": ORDERS, "StateMachineArn": STATE_MACHINE_ARN}, region="us-east-1"
        )
        repository = wiring.orders(ORDERS)
        self.intake = IntakeService(repository, SagaStarter(STATE_MACHINE_ARN, client=wiring.client("stepfunctions")))
        self.logger = get_logger(service="explore", level="CRITICAL")
        world.hooks = self

    # -- dispatcher hooks (World._call) ------------------------------------------------------------

    def answer(self, operation: str, params: dict[str, Any]) -> Any:
        """The model's answer to a Step Functions read, or None (moto answers)."""
        if operation == "ListExecutions":
            wanted = params.get("statusFilter")
            listed = [e for e in self.executions.values() if wanted is None or e.status == wanted]
            return {"executions": [self._described(e) for e in listed]}
        if operation == "DescribeExecution":
            name = str(params["executionArn"]).rsplit(":", 1)[-1]
            if name in self.executions:
                return self._described(self.executions[name])
        return None

    def _described(self, execution: Execution) -> dict[str, Any]:
        arn = STATE_MACHINE_ARN.replace(":stateMachine:", ":execution:") + f":{execution.name}"
        return {
            "executionArn": arn,
            "stateMachineArn": STATE_MACHINE_ARN,
            "name": execution.name,
            "status": execution.status,
            "startDate": execution.started_at,
        }

    def after(self, operation: str, params: dict[str, Any]) -> None:
        if operation == "StartExecution":
            given = json.loads(params["input"])
            self.executions[params["name"]] = Execution(
                name=params["name"],
                order_id=given["order_id"],
                attempt=int(given["payment_attempt"]),
                correlation_id=str(given.get("correlation_id")),
                compensate=given.get("compensate") is True,
                started_at=self.world.clock.now(),
            )
        elif operation == "PutItem" and params.get("TableName") == LEDGER:
            pk = params["Item"]["pk"]["S"]
            if pk.startswith("op#"):
                self.op_created.setdefault(pk, self.world.clock.now())
        elif operation == "PutItem" and params.get("TableName") == IDEMPOTENCY:
            self.idem_created[params["Item"]["id"]["S"]] = self.world.clock.now()

    # -- customers and intake ----------------------------------------------------------------------

    def place(self, kind: str) -> str:
        order_id = f"o{len(self.orders) + 1}"
        self.orders[order_id] = PlacedOrder(order_id, kind)
        self._accept(self.orders[order_id])
        return order_id

    def message(self, placed: PlacedOrder) -> dict[str, Any]:
        token, sku, country = KINDS[placed.kind]
        if placed.attempt > 1:
            token = "tok_visa"  # the customer pays again with a good card
        return {
            "order_id": placed.order_id,
            "customer_id": "customer-1",
            "currency": "EUR",
            "payment_token": token,
            "payment_attempt": placed.attempt,
            "items": [{"sku": sku, "quantity": 1, "unit_price_cents": 1250}],
            "shipping_address": {**ADDRESS, "country": country},
        }

    def _accept(self, placed: PlacedOrder) -> None:
        """Intake's record-and-start (lambdas/intake: IntakeService.accept), as a delivery of the message."""
        with correlation_scope(self.logger, new_correlation_id()):
            try:
                self.intake.accept(self.message(placed))
            except Exception as exc:  # classified by intake's handler: transient ones come back, others DLQ
                self.logger.info("intake refused", extra={"error_type": type(exc).__name__})

    def redeliver(self, order_id: str) -> None:
        """SQS delivers the message again, or an operator replays it from the DLQ: the same intake."""
        self._accept(self.orders[order_id])

    def new_attempt(self, order_id: str) -> None:
        """The customer pays again (attempt N+1) with a good card."""
        placed = self.orders[order_id]
        placed.attempt += 1
        self._accept(placed)

    # -- executions --------------------------------------------------------------------------------

    def step(self, execution: Execution, fault: str) -> None:
        """Run the execution's current Task once, with ``fault``; move it as the definition does."""
        world = self.world
        world.faults.clear()
        if fault == "outage":
            execution.exhaust()
            execution.failed("Lambda.TooManyRequestsException", "throttled for the whole retry budget")
            return self._settle(execution)
        before = self._status(execution.order_id) if execution.spec.kind == "forward" else None
        if fault == "status_write":
            world.faults.fail_status_to = {
                "INVENTORY_RESERVED",
                "PAYMENT_CHARGED",
                "COMPLETED",
                "COMPENSATED",
                "COMPENSATING",
                "NEEDS_ATTENTION",
            }
        world.faults.crash_after_effect = fault == "crash_after_effect"
        world.faults.crash_before_effect = fault == "crash_before_effect"
        try:
            self._invoke(execution)
            if fault == "answer_lost":
                execution.failed("Lambda.ServiceException", "the answer was lost")
            else:
                execution.succeeded()
        except Died as died:
            self._timed_out_invocation()
            execution.failed("Sandbox.Timedout", str(died))
        except _TaskError as exc:
            execution.failed(exc.name, exc.cause)
        finally:
            effect = world.faults.effect_done
            world.faults.clear()
        if before == "COMPENSATING" and effect:
            self.violations.append(
                f"forward step {execution.history[-1]} acted on a COMPENSATING order {execution.order_id}"
            )
        world.clock.advance(2.0)  # a Task's latency plus Step Functions' retry wait, roughly
        self._settle(execution)

    def _settle(self, execution: Execution) -> None:
        """An execution that reached SUCCEEDED or FAILED ends (a repair's lease is then replaced or expires); what
        it left is noted (a closed execution's status never changes after: Step Functions redrives only a FAILED,
        TIMED_OUT or ABORTED one)."""
        if execution.ended():
            item = self.world.raw("GetItem", TableName=ORDERS, Key=to_item({"order_id": execution.order_id}))
            order = item.get("Item", {})
            status = order.get("status", {}).get("S", "")
            execution.left = (status, int(order.get("payment_attempt", {}).get("N", "1")))

    def _invoke(self, execution: Execution) -> None:
        spec = execution.spec
        if execution.state in MARKS:
            return self._mark(execution)
        if execution.state == "NotifyNeedsAttention":
            wiring.client("sqs").send_message(
                QueueUrl=NEEDS_ATTENTION_URL,
                MessageBody=json.dumps(
                    {
                        "order_id": execution.order_id,
                        "payment_attempt": execution.attempt,
                        "correlation_id": execution.correlation_id,
                        "reason": "last resort",
                        "error": execution.error,
                        "source": "saga-last-resort",
                    }
                ),
            )
            return None
        assert spec.function is not None
        try:
            self.world.handlers[spec.function](execution.event(), self.world.context())
        except Died:
            raise
        except Exception as exc:
            raise _TaskError(type(exc).__name__, str(exc)) from exc
        return None

    def _mark(self, execution: Execution) -> None:
        """MarkCompleted / MarkCompensated: the definition's direct conditional UpdateItem."""
        status, sources = MARKS[execution.state]
        now = self.world.clock.now()
        from order_domain import clock

        at = clock.iso(now)
        values: dict[str, Any] = {
            ":to": status,
            ":now": at,
            ":entry": [
                {"status": status, "at": at, "attempt": execution.attempt, "correlation_id": execution.correlation_id}
            ],
            ":attempt": execution.attempt,
        }
        for i, source in enumerate(sources):
            values[f":f{i}"] = source
        placeholders = ", ".join(f":f{i}" for i in range(len(sources)))
        try:
            wiring.client("dynamodb").update_item(
                TableName=ORDERS,
                Key=to_item({"order_id": execution.order_id}),
                UpdateExpression="SET #s = :to, #u = :now, #h = list_append(#h, :entry)",
                ConditionExpression=(
                    f"attribute_exists(order_id) AND #s IN ({placeholders}) "
                    "AND (attribute_not_exists(payment_attempt) OR payment_attempt = :attempt)"
                ),
                ExpressionAttributeNames={"#s": "status", "#u": "updated_at", "#h": "history"},
                ExpressionAttributeValues=to_item(values),
            )
        except ClientError as exc:
            raise _TaskError(f"DynamoDB.{exc.response['Error']['Code']}", "") from exc

    def _timed_out_invocation(self) -> None:
        """A crashed invocation's IN_PROGRESS record: Step Functions retries after the function's
        timeout, when the record's in-progress expiry has passed (so the retry takes it over)."""
        for item in self.world.scan(IDEMPOTENCY):
            if item.get("status") == "INPROGRESS":
                self.world.raw(
                    "UpdateItem",
                    TableName=IDEMPOTENCY,
                    Key=to_item({"id": item["id"]}),
                    UpdateExpression="SET in_progress_expiration = :past",
                    ExpressionAttributeValues=to_item({":past": 1}),
                )

    def time_out(self, execution: Execution) -> None:
        """The execution hits its timeout (a hung Task): Step Functions ends it TIMED_OUT."""
        execution.status = "TIMED_OUT"
        execution.started_at = self.world.clock.now()

    def redrive(self, execution: Execution) -> None:
        """Step Functions Redrive: the closed execution runs again from the state that did not finish."""
        execution.status = "RUNNING"
        execution.retries = {}

    # -- the sweeper and operators -----------------------------------------------------------------

    def sweep(self) -> None:
        self.sweeps.append(self.world.clock.now())
        try:
            self.world.handlers["sweeper"]({}, self.world.context(300))
        except Exception as exc:  # SweepIncomplete: EventBridge's next run sweeps again
            self.logger.info("sweep incomplete", extra={"error_type": type(exc).__name__})

    def repair(self, order_id: str, action: str) -> None:
        from ops.repair import RepairRefused, repair

        try:
            repair(self.target, order_id, action)  # type: ignore[arg-type]
        except RepairRefused:
            return
        if action == "compensate":
            self.orders[order_id].operator_compensated = True

    # -- providers and time ------------------------------------------------------------------------

    def advance(self, seconds: float) -> None:
        self.world.clock.advance(seconds)

    def providers_forget(self) -> None:
        """The providers drop idempotency keys older than their window; what moved stays moved (archived)."""
        now = self.world.clock.now()
        for pk, created in list(self.op_created.items()):
            if now - created < PROVIDER_KEY_SECONDS:
                continue
            item = self.world.raw("GetItem", TableName=LEDGER, Key=to_item({"pk": pk, "sk": "op"}))
            if "Item" in item:
                from lambda_resilience.aws import from_item

                self.archive.setdefault(pk, from_item(item["Item"]))
                self.world.raw("DeleteItem", TableName=LEDGER, Key=to_item({"pk": pk, "sk": "op"}))
            del self.op_created[pk]

    def records_expire(self) -> None:
        """Idempotency records past their TTL are gone (DynamoDB's TTL deletion)."""
        now = self.world.clock.now()
        for key, created in list(self.idem_created.items()):
            if now - created >= IDEMPOTENCY_TTL_SECONDS:
                self.world.raw("DeleteItem", TableName=IDEMPOTENCY, Key=to_item({"id": key}))
                del self.idem_created[key]

    def late_refund_failure(self, order_id: str) -> bool:
        """A refund that succeeded fails days later (https://docs.stripe.com/refunds#failed-refunds):
        the money is captured again. True if there was such a refund."""
        placed = self.orders[order_id]
        pk = f"op#payment#{order_id}#charge-payment#attempt-{placed.attempt}"
        if pk in self.archive:  # the provider forgot the key, not the refund: it can still fail
            op = self.archive[pk]
            if not op.get("refunded") or op.get("status") not in ("captured", "partially_captured"):
                return False
            op.pop("refunded")
        else:
            item = self.world.raw("GetItem", TableName=LEDGER, Key=to_item({"pk": pk, "sk": "op"}))
            if "Item" not in item or not item["Item"].get("refunded", {}).get("BOOL"):
                return False
            if item["Item"].get("status", {}).get("S") not in ("captured", "partially_captured"):
                return False
            self.world.raw(
                "UpdateItem", TableName=LEDGER, Key=to_item({"pk": pk, "sk": "op"}), UpdateExpression="REMOVE refunded"
            )
        placed.late_events.append(self.world.clock.now())
        placed.late_attempts.add(placed.attempt)
        return True

    def _status(self, order_id: str) -> str | None:
        item = self.world.raw("GetItem", TableName=ORDERS, Key=to_item({"order_id": order_id}), ConsistentRead=True)
        return item["Item"]["status"]["S"] if "Item" in item else None


class _TaskError(Exception):
    def __init__(self, name: str, cause: str) -> None:
        super().__init__(name)
        self.name, self.cause = name, cause
