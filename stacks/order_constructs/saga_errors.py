"""The order saga's error vocabulary: which step errors are retried, refused, compensated or parked, the
outcome writes' condition error and the one path the park reads (the state machine is :mod:`order_saga`)."""

from __future__ import annotations

#: Errors worth retrying on forward steps: Lambda service faults and our transient class. Step handlers
#: re-raise every transient failure as ``TransientStepError`` (lambda_resilience/exceptions.py).
DEFAULT_TRANSIENT_ERRORS: tuple[str, ...] = (
    "TransientStepError",
    "UnknownStepError",  # unexpected (a bug?): retried like transient, then parked (decision 0032)
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
    "Lambda.ClientExecutionTimeoutException",
    "Sandbox.Timedout",  # the function timed out (or was killed): its idempotency record lets the retry resume
)

#: Errors meaning "this execution's input refers to nothing we can act on" (an unknown order, a
#: malformed input, a replaced payment attempt): raised by ReserveInventory before any side
#: effect, so the execution fails at once with nothing to compensate.
DEFAULT_REFUSED_INPUT_ERRORS: tuple[str, ...] = ("UnknownOrder", "InvalidStepInput", "StaleAttempt")

#: Raised by ReserveInventory (before anything else) for an input with ``"compensate": true``: an
#: operator's repair (``ops repair --action compensate``) goes straight to the compensations.
COMPENSATION_REQUESTED = "CompensationRequested"

#: Raised by any step on a parked order nobody asked it to act on (a Redrive): fails at once (decision 0029).
ORDER_PARKED = "OrderParked"

#: The error of a conditional outcome write whose condition does not hold: the order already has
#: that outcome (a repeat), is past it, or a newer payment attempt owns it. Nothing is overwritten.
CONDITION_FAILED = "DynamoDB.ConditionalCheckFailedException"

#: The one path every route to the park writes its error to, and the park (and the last resort) reads:
#: a compensation's error, an outcome write's error, or ShipmentNotCancellable.
PARK_ERROR_PATH = "$.compensation_error"

#: Raised by CancelShipment when the carrier refuses to cancel a parcel (already handed over): the
#: saga parks at once, without refunding or releasing (never refund a parcel that ships).
SHIPMENT_NOT_CANCELLABLE = "ShipmentNotCancellable"

#: Raised by ShipOrder when the carrier rejected the shipment: nothing shipped, CancelShipment is skipped.
SHIPPING_UNAVAILABLE = "ShippingUnavailable"

#: The forward steps' errors that undo the order (besides a declined card and a carrier's refusal, which skip
#: the step's own compensation): a business outcome (no stock, an invalid order, a charge the customer did not
#: complete) or an order another actor moved on or replaced (decision 0028: the compensations act on what the
#: providers say). Any other error parks the order for a person, nothing undone (decision 0034).
COMPENSATE_ON: dict[str, tuple[str, ...]] = {
    "ReserveInventory": ("InsufficientStock", "InvalidOrder", "InvalidTransition", "OrderMovedOn"),
    "ChargePayment": ("PaymentIncomplete", "StaleAttempt", "OrderMovedOn"),
    "ShipOrder": ("StaleAttempt",),
}

#: Raised by ShipOrder / the last compensation when their effect is done but their own outcome write
#: failed (lambda_resilience.exceptions): MarkCompleted / MarkCompensated record it, nothing is undone.
EFFECT_DONE = "EffectDoneOutcomeNotWritten"
