"""Sandbox payment provider and carrier, deployed with the stack.

They behave like real third-party APIs: they honour a caller-supplied idempotency key and
record *every* request they receive in a ledger (deduplicated ones included). Duplicate side
effects are counted from this ledger, independently of the pipeline's own bookkeeping.

Deterministic outcomes, decided by the order itself (payment token *prefix* / shipping country),
so every test order can carry its own unique token (``tok_decline_<hex>``):
- ``tok_decline...``: the charge is declined (no money moves);
- ``tok_partial...``: only half the amount is captured (money moved, order cannot proceed);
- ``tok_auth_only...``: the charge is authorised but never captured (a hold, to be voided);
- ``tok_refund_flaky...``: charges normally; the first two refund requests fail with a provider error;
- ``tok_refund_broken...``: charges normally; every refund request fails with a provider error;
- ``tok_refund_pending...``: charges normally; a refund is answered ``pending`` (Stripe settles refunds
  later: https://docs.stripe.com/refunds#failed-refunds) and settles ``succeeded`` after
  :data:`REFUND_SETTLE_SECONDS`;
- ``tok_refund_fails_later...``: as ``tok_refund_pending``, but the refund settles ``failed`` (the money
  was never returned: the order must be parked, whatever it recorded meanwhile);
- any other token: captured;
- country ``ZZ``: the carrier rejects the shipment;
- country ``XH`` ("handed over"): the carrier ships, and the parcel is at once handed over to the
  delivery network: a later cancel is refused (the answer keeps ``shipped``, reason
  ``handed_over``). Any other shipped parcel is cancelled on request (status ``cancelled``).

The sandbox never logs, stores or returns a payment token, name or address: the ledger keeps
the token's behaviour profile (:func:`token_profile`), not the token.
"""

DECLINE_TOKEN = "tok_decline"
PARTIAL_CAPTURE_TOKEN = "tok_partial"
AUTH_ONLY_TOKEN = "tok_auth_only"
REFUND_FLAKY_TOKEN = "tok_refund_flaky"
REFUND_BROKEN_TOKEN = "tok_refund_broken"
REFUND_FLAKY_FAILURES = 2
REFUND_PENDING_TOKEN = "tok_refund_pending"
REFUND_FAILS_LATER_TOKEN = "tok_refund_fails_later"
#: When a pending sandbox refund settles (Stripe: a refund to a card takes 5 to 10 business days to reach the
#: cardholder, and a failure may be reported then: https://docs.stripe.com/refunds#refund-status).
REFUND_SETTLE_SECONDS = 5 * 86400
UNDELIVERABLE_COUNTRY = "ZZ"
HANDED_OVER_COUNTRY = "XH"

#: Behaviour profiles, by token prefix (no prefix is a prefix of another).
TOKEN_PROFILES = (
    (DECLINE_TOKEN, "decline"),
    (PARTIAL_CAPTURE_TOKEN, "partial_capture"),
    (AUTH_ONLY_TOKEN, "auth_only"),
    (REFUND_FLAKY_TOKEN, "refund_flaky"),
    (REFUND_BROKEN_TOKEN, "refund_broken"),
    (REFUND_PENDING_TOKEN, "refund_pending"),
    (REFUND_FAILS_LATER_TOKEN, "refund_fails_later"),
)
#: The profiles whose refunds are answered ``pending`` -> how they settle.
PENDING_REFUND_PROFILES = {"refund_pending": "succeeded", "refund_fails_later": "failed"}
DEFAULT_PROFILE = "capture"


def token_profile(token: object) -> str:
    """How the sandbox treats a payment token, decided by its prefix."""
    text = token if isinstance(token, str) else ""
    return next((profile for prefix, profile in TOKEN_PROFILES if text.startswith(prefix)), DEFAULT_PROFILE)
