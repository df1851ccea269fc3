"""Sandbox payment provider and carrier, deployed with the stack.

They behave like real third-party APIs: they honour a caller-supplied idempotency key and
record *every* request they receive in a ledger (deduplicated ones included). Duplicate side
effects are counted from this ledger, independently of the pipeline's own bookkeeping.

Deterministic outcomes, decided by the order itself (payment token / shipping country):
- ``tok_decline``: the charge is declined (no money moves);
- ``tok_partial``: only half the amount is captured (money moved, order cannot proceed);
- ``tok_auth_only``: the charge is authorised but never captured (a hold, to be voided);
- ``tok_refund_flaky``: charges normally; the first two refund requests fail with a provider error;
- ``tok_refund_broken``: charges normally; every refund request fails with a provider error;
- country ``ZZ``: the carrier rejects the shipment.
"""

DECLINE_TOKEN = "tok_decline"
PARTIAL_CAPTURE_TOKEN = "tok_partial"
AUTH_ONLY_TOKEN = "tok_auth_only"
REFUND_FLAKY_TOKEN = "tok_refund_flaky"
REFUND_BROKEN_TOKEN = "tok_refund_broken"
REFUND_FLAKY_FAILURES = 2
UNDELIVERABLE_COUNTRY = "ZZ"
