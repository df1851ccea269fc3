"""The order saga's state machine as data, and an execution that a rule moves one Task at a time.

The routes are the ones the definition builds (stacks/order_constructs/order_saga.py on
constructs_lib.saga: forward.py, compensation.py, park.py), written out so that each step of the
exploration is one invocation of the real step handler, not a run of the Step Functions engine:

- ReserveInventory -> ChargePayment -> ShipOrder (ShipOrder records COMPLETED itself, decision 0024);
  refused input ends the execution FAILED; ``CompensationRequested`` (an operator's repair) ->
  CancelShipment; a throttle past its retries parks (MarkNeedsAttention, nothing undone); any other
  failure compensates what ran before.
- CancelShipment -> RefundPayment -> ReleaseInventory (records COMPENSATED); ShipmentNotCancellable
  or a failed cancel parks; a failed refund -> ReleaseInventoryThenPark -> park.
- ``EffectDoneOutcomeNotWritten`` -> MarkCompleted / MarkCompensated (direct conditional UpdateItem);
  their condition failing ends the execution SUCCEEDED (OutcomeAlreadyRecorded); anything else parks.
- MarkNeedsAttention (finalize_order) -> FAILED; it failing -> the last resort (a direct SendMessage).

Retries: forward steps and recorders retry the transient errors 6 times, compensations any error 5
times (Step Functions Retry, https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html;
the stack's policies: order_saga.default_forward_retry, constructs_lib.saga.tasks.default_compensation_retry).
A crashed invocation reaches Step Functions as ``Sandbox.Timedout`` once the function's timeout passed
(https://docs.aws.amazon.com/step-functions/latest/dg/bp-lambda-serviceexception.html).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lambda_resilience.tracing import EXECUTION_INPUT

ALL = "States.ALL"
TRANSIENT = frozenset(
    {
        "TransientStepError",
        "UnknownStepError",
        "Lambda.ServiceException",
        "Lambda.AWSLambdaException",
        "Lambda.SdkClientException",
        "Lambda.TooManyRequestsException",
        "Sandbox.Timedout",
    }
)
DYNAMODB_TRANSIENT = frozenset({"DynamoDB.ThrottlingException", "DynamoDB.ProvisionedThroughputExceededException"})
REFUSED = frozenset({"UnknownOrder", "InvalidStepInput", "StaleAttempt"})
EFFECT_DONE = "EffectDoneOutcomeNotWritten"
#: A forward step still throttled after its throttle retrier parks the order, nothing undone (park_on, 0005).
THROTTLED = "Lambda.TooManyRequestsException"
CONDITION_FAILED = "DynamoDB.ConditionalCheckFailedException"
FORWARD_RETRIES, COMPENSATION_RETRIES = 6, 5
#: Terminal pseudo-states of an execution.
SUCCEEDED, FAILED = "SUCCEEDED", "FAILED"


@dataclass(frozen=True)
class Spec:
    """One Task state: the function it invokes (None: a direct service integration), its kind, where
    success goes, its catches in order (errors -> next state), what it retries and how often."""

    function: str | None
    ok: str
    catches: tuple[tuple[frozenset[str], str], ...]
    retry_on: frozenset[str] | None  # None: any error (compensations)
    retries: int
    no_retry: frozenset[str] = frozenset()
    kind: str = "forward"

    def route(self, error: str) -> str:
        for errors, target in self.catches:
            if error in errors or ALL in errors:
                return target
        raise AssertionError(f"no catch for {error}")

    def retried(self, error: str) -> bool:
        if error in self.no_retry:
            return False
        return self.retry_on is None or error in self.retry_on


def _all() -> frozenset[str]:
    return frozenset({ALL})


def _catch(*pairs: tuple[set[str], str]) -> tuple[tuple[frozenset[str], str], ...]:
    return tuple((frozenset(errors), target) for errors, target in pairs)


STATES: dict[str, Spec] = {
    "ReserveInventory": Spec(
        "reserve_inventory",
        "ChargePayment",
        _catch(
            (set(REFUSED), FAILED),
            ({"CompensationRequested"}, "CancelShipment"),
            ({THROTTLED}, "MarkNeedsAttention"),
            ({ALL}, "ReleaseInventory"),
        ),
        TRANSIENT,
        FORWARD_RETRIES,
    ),
    "ChargePayment": Spec(
        "charge_payment",
        "ShipOrder",
        _catch(
            ({"PaymentDeclined"}, "ReleaseInventory"), ({THROTTLED}, "MarkNeedsAttention"), ({ALL}, "RefundPayment")
        ),
        TRANSIENT,
        FORWARD_RETRIES,
    ),
    "ShipOrder": Spec(
        "ship_order",
        SUCCEEDED,
        _catch(
            ({"ShippingUnavailable"}, "RefundPayment"),
            ({EFFECT_DONE}, "MarkCompleted"),
            ({THROTTLED}, "MarkNeedsAttention"),
            ({ALL}, "CancelShipment"),
        ),
        TRANSIENT,
        FORWARD_RETRIES,
    ),
    "CancelShipment": Spec(
        "cancel_shipment",
        "RefundPayment",
        _catch(({ALL}, "MarkNeedsAttention")),
        None,
        COMPENSATION_RETRIES,
        no_retry=frozenset({"ShipmentNotCancellable"}),
        kind="compensation",
    ),
    "RefundPayment": Spec(
        "refund_payment",
        "ReleaseInventory",
        _catch(({ALL}, "ReleaseInventoryThenPark")),
        None,
        COMPENSATION_RETRIES,
        kind="compensation",
    ),
    "ReleaseInventory": Spec(
        "release_inventory",
        SUCCEEDED,
        _catch(({EFFECT_DONE}, "MarkCompensated"), ({ALL}, "MarkNeedsAttention")),
        None,
        COMPENSATION_RETRIES,
        no_retry=frozenset({EFFECT_DONE}),
        kind="compensation",
    ),
    "ReleaseInventoryThenPark": Spec(
        "release_inventory",
        "MarkNeedsAttention",
        _catch(({ALL}, "MarkNeedsAttention")),
        None,
        COMPENSATION_RETRIES,
        kind="compensation",
    ),
    "MarkCompleted": Spec(
        None,
        SUCCEEDED,
        _catch(({CONDITION_FAILED}, SUCCEEDED), ({ALL}, "MarkNeedsAttention")),
        DYNAMODB_TRANSIENT,
        FORWARD_RETRIES,
        kind="recorder",
    ),
    "MarkCompensated": Spec(
        None,
        SUCCEEDED,
        _catch(({CONDITION_FAILED}, SUCCEEDED), ({ALL}, "MarkNeedsAttention")),
        DYNAMODB_TRANSIENT,
        FORWARD_RETRIES,
        kind="recorder",
    ),
    "MarkNeedsAttention": Spec(
        "finalize_order", FAILED, _catch(({ALL}, "NotifyNeedsAttention")), TRANSIENT, FORWARD_RETRIES, kind="recorder"
    ),
    "NotifyNeedsAttention": Spec(None, FAILED, _catch(({ALL}, FAILED)), None, 0, kind="recorder"),
}
#: The outcome a Mark state writes, and from which statuses (order_saga.OrderSagaProps defaults).
MARKS = {
    "MarkCompleted": ("COMPLETED", ("PAYMENT_CHARGED", "SHIPPED")),
    "MarkCompensated": ("COMPENSATED", ("COMPENSATING",)),
}


@dataclass
class Execution:
    """One saga execution as the model runs it: where it is, how many retries its state used."""

    name: str
    order_id: str
    attempt: int
    correlation_id: str
    compensate: bool = False
    state: str = "ReserveInventory"
    retries: int = 0
    status: str = "RUNNING"
    error: dict[str, Any] | None = None
    started_at: float = 0.0
    history: list[str] = field(default_factory=list)

    @property
    def running(self) -> bool:
        return self.status == "RUNNING"

    @property
    def spec(self) -> Spec:
        return STATES[self.state]

    def execution_input(self) -> dict[str, Any]:
        given: dict[str, Any] = {
            "order_id": self.order_id,
            "payment_attempt": self.attempt,
            "correlation_id": self.correlation_id,
        }
        if self.compensate:
            given["compensate"] = True
        return given

    def event(self) -> dict[str, Any]:
        """The Task's payload, as the definition builds it (the state; the final release's and the
        park's payloads name their fields)."""
        given = self.execution_input()
        if self.state == "ReleaseInventory":
            return {**given, EXECUTION_INPUT: given, "record_outcome": "COMPENSATED"}
        if self.state == "MarkNeedsAttention":
            return {
                "outcome": "NEEDS_ATTENTION",
                **given,
                "execution_name": self.name,
                EXECUTION_INPUT: given,
                "error": self.error or {"Error": "unknown", "Cause": ""},
            }
        return given

    def succeeded(self) -> None:
        self.history.append(f"{self.state}:ok")
        self.state, self.retries = self.spec.ok, 0

    def failed(self, error: str, cause: str) -> None:
        """The invocation failed with ``error``: retried while the policy allows, else caught."""
        self.history.append(f"{self.state}:{error}")
        spec = self.spec
        if spec.retried(error) and self.retries < spec.retries:
            self.retries += 1
            return
        self.state, self.retries = spec.route(error), 0
        if self.state not in (SUCCEEDED, FAILED):
            self.error = {"Error": error, "Cause": cause[:256]}

    def exhaust(self) -> None:
        """The next failure is the last the retry policy allows (an outage that outlasts the retries)."""
        self.retries = self.spec.retries

    def ended(self) -> bool:
        if self.state in (SUCCEEDED, FAILED):
            self.status = self.state
            return True
        return False
