"""The order domain's business errors, in the middleware's tree (so they are classified).

Permanent: the same message fails the same way every time (dead-lettered at once, or caught by
the saga by name). Business outcomes (declined, unstocked, undeliverable, partly paid) are
permanent errors that never page (docs/decisions/0020). Transient: retried.
"""

from __future__ import annotations

from lambda_resilience.exceptions import BusinessOutcome, DependencyUnavailable, PermanentError, TransientError


class InvalidOrder(PermanentError):
    """Malformed JSON or a payload that violates the order schema."""


class InvalidTransition(PermanentError):
    """An order status change that would skip a state or move backwards."""


class UnknownOrder(PermanentError):
    """A step referenced an order that does not exist."""


class StaleAttempt(PermanentError):
    """A step or message names a payment attempt that a newer attempt has replaced."""


class OrderClosed(PermanentError):
    """A new payment attempt for an order that can take none (completed, or parked for an operator)."""


class InsufficientStock(BusinessOutcome):
    """ReserveInventory could not reserve every item."""


class PaymentDeclined(BusinessOutcome):
    """The payment provider declined the charge."""


class PaymentIncomplete(BusinessOutcome):
    """Money may have moved but the charge is not complete (partly captured, or only authorised)."""


class ShippingUnavailable(BusinessOutcome):
    """The carrier rejected the shipment."""


class ShipmentNotCancellable(PermanentError):
    """The carrier refused to cancel a shipment (the parcel was already handed over): the saga parks
    the order at once, without refunding it (never refund a parcel that ships)."""


class ProviderRejected(PermanentError):
    """An external provider refused the request (HTTP 4xx other than 409, 422 and 429): it will refuse it again."""


class ProviderUnavailable(DependencyUnavailable):
    """An external provider failed or timed out; its outcome may be unknown. Raised by the provider adapters only
    (``providers``, ``https_providers``, and for a provider's answer off its contract): the middleware counts it as
    ``DependencyFailures``, and on the operation's first call as ``DependencyFirstCallFailures``, what the provider
    outage alarms read (issue 41, decision 0033)."""


class ProviderInFlight(ProviderUnavailable):
    """The provider is still processing a request with this idempotency key (HTTP 409): the outcome
    is unknown, not failed. Retried within the step's budget; a compensation that meets it retries
    too and then parks the order (it never undoes an outcome it does not know)."""


class ProviderForgot(PermanentError):
    """The order's own record says this attempt's side effect happened, but the provider finds no
    record of it by key (its key window passed): a person must look; nothing is undone blindly."""


class InventoryContention(TransientError):
    """An inventory transaction was cancelled by something other than its conditions (a throttled item, a
    conflicting transaction), or the reservation kept changing: the step's own DynamoDB trouble, retried."""


class AttemptInProgress(TransientError):
    """An earlier payment attempt of the same order is still running: wait for it, then retry."""


class RefundIncomplete(PermanentError):
    """The provider's refund answer does not give back what its own records say moved: a person must look."""


class AttemptMismatch(PermanentError):
    """A new payment attempt that changes more than the payment token (customer, items, currency or
    address): an attempt N+1 retries attempt N's payment, it is not a new order under the same ID."""


class OrderIdTaken(PermanentError):
    """A message for an order ID another caller (IAM principal) owns: never applied to that order."""


class OrderMovedOn(PermanentError):
    """Another actor (an operator's repair, the sweeper, another execution's compensation) moved the
    order past this forward step's stage after the step's effect: its status write was refused. The
    step fails by this name, never reports success (the saga would go on to charge or ship an order
    being undone); the saga's catch-all routes it to the compensations, which act on what the
    providers say happened."""


class OrderParked(BusinessOutcome):
    """The order is parked for an operator (NEEDS_ATTENTION: announced when it was parked) and nobody asked
    this step to act on it: a Step Functions Redrive of an execution the sweeper parked the order of, a late
    duplicate, an execution started late. The step does nothing, before any effect and any idempotency
    record; the saga fails the execution at once (``AlreadyParked``): no compensation, no second park or
    announcement, never SUCCEEDED with the order parked. The order's exits stay ``ops repair`` and
    ``ops resolve`` (docs/decisions/0029). A business outcome: counted as expected, never paged (a redrive is
    an operator's action)."""
