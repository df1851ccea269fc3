"""lambda_resilience: resilient SQS / Step Functions Lambda handlers on Powertools for AWS Lambda.

Adds what Powertools leaves to the caller, and nothing it already does:

- :mod:`lambda_resilience.idempotency`: idempotency keyed by readable business keys
  (``order-123#charge-payment#attempt-1``), payload mismatch rejected loudly, crashed attempts taken over;
- :mod:`lambda_resilience.correlation`: one correlation ID per SQS record, carried everywhere;
- :mod:`lambda_resilience.batch`: SQS batches processed concurrently with partial failures;
- :mod:`lambda_resilience.classification`: every failure is permanent, transient or unknown;
- :mod:`lambda_resilience.dlq`: permanent failures dead-lettered at once, replay by category;
- :mod:`lambda_resilience.step`: Step Functions task handlers (idempotent, retryable error names);
- :mod:`lambda_resilience.logs`, :mod:`lambda_resilience.tracing`: bounded, masked logs; OTel spans, W3C context.

Submodules are imported on demand: ``import lambda_resilience`` costs nothing at cold start.
"""

__version__ = "0.1.0"
