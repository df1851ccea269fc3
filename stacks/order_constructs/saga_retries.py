"""The order saga's retry policies, one per kind of failure: Lambda's service errors (AWS's advice), a Lambda
throttle (nothing ran: waited out), and a dependency's outage (the step ran, a provider or table was down:
waited out). Past any of them a valid order is parked for a person, never compensated (decision 0032)."""

from __future__ import annotations

from aws_cdk import Duration

from constructs_lib.generic_saga import RetryPolicy

#: Errors meaning "a dependency the step calls is down, nothing is wrong with the order": the step middleware's
#: transient class (a provider's 5xx or 429, a throttled or failing DynamoDB call: lambda_resilience.exceptions)
#: and a function that timed out (waiting on one; its idempotency record lets the retry resume). Waited out by
#: :func:`default_outage_retry`, ahead of the forward retrier.
OUTAGE_ERRORS: tuple[str, ...] = ("TransientStepError", "Sandbox.Timedout")


def default_forward_retry() -> RetryPolicy:
    """Forward steps, outcome writes and the park: Step Functions' documented retry of Lambda service
    errors (IntervalSeconds 2, MaxAttempts 6, BackoffRate 2:
    https://docs.aws.amazon.com/step-functions/latest/dg/bp-lambda-serviceexception.html), delays
    capped at 30 s: up to 90 s of backoff, so a throttle burst or a live duplicate invocation (the first
    one still running, up to the step's 30 s timeout) is waited out rather than compensated."""
    return RetryPolicy(interval=Duration.seconds(2), backoff_rate=2, max_attempts=6, max_delay=Duration.seconds(30))


def default_throttle_retry() -> RetryPolicy:
    """Forward steps' own retrier for a Lambda throttle (``Lambda.TooManyRequestsException``): Lambda refused
    the invocation, nothing ran, so the step waits rather than compensating a valid order. Lambda scales each
    function by 1,000 execution environments every 10 seconds up to the account's concurrency
    (https://docs.aws.amazon.com/lambda/latest/dg/scaling-behavior.html): a burst is absorbed in seconds; a
    throttle that lasts is the account's concurrency exhausted for as long as the load stays above it. 1 s
    doubling to 60 s, 13 retries, FULL jitter: at most 483 s of delays, two minutes waited out in at least 99%
    of sequences (tests/infra/test_time_budget.py), each refused attempt costing no function time."""
    return RetryPolicy(interval=Duration.seconds(1), backoff_rate=2, max_attempts=13, max_delay=Duration.seconds(60))


def default_outage_retry() -> RetryPolicy:
    """Forward steps' own retrier for :data:`OUTAGE_ERRORS`: a provider's or a table's outage is waited out
    rather than compensating a valid order. No provider documents how long its outages last, so this is our
    figure, not theirs: five minutes waited out in at least 99% of sequences (2 s doubling to 60 s, 20 retries,
    FULL jitter: at most 962 s of delays; tests/infra/test_time_budget.py). The outage alarm has paged after its
    first minute (decision 0023); an order still failing after the retrier parks, paged, and
    ``ops repair --action redrive`` finishes it once the provider is back (docs/runbooks.md)."""
    return RetryPolicy(interval=Duration.seconds(2), backoff_rate=2, max_attempts=20, max_delay=Duration.seconds(60))
