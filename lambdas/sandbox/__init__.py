"""Sandbox payment provider and carrier, deployed with the stack.

They behave like real third-party APIs: they honour a caller-supplied idempotency key and
record *every* request they receive in a ledger (deduplicated ones included). Duplicate side
effects are counted from this ledger, independently of the pipeline's own bookkeeping.

Deterministic outcomes, decided by the order itself:
- payment token ``tok_decline`` -> the charge is declined;
- shipping country ``ZZ`` -> the carrier rejects the shipment.
"""

DECLINE_TOKEN = "tok_decline"
UNDELIVERABLE_COUNTRY = "ZZ"
