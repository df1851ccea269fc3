"""Middleware every pipeline handler uses: idempotency, correlation, SQS batches, saga steps.

Built on Powertools for AWS Lambda (Python): this package adds what Powertools leaves to the
caller - readable business idempotency keys, per-SQS-record correlation IDs, failure
classification - and nothing it already does.
"""
