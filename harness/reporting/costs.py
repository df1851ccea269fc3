"""Cost per order from the AWS calls of a local run and public list prices.

Prices: us-east-1 public list prices as published on the AWS pricing pages, read for this
project on 2026-11-21 (free tiers ignored). Re-check them before quoting a number: only the
call counts are measured; the prices and the Lambda duration below are assumptions.

Lambda (https://aws.amazon.com/lambda/pricing/, US East (N. Virginia), first duration tier:
up to 6 billion GB-seconds a month on x86, 7.5 billion on Arm): requests $0.20 per million on
both architectures; duration $0.0000166667 per GB-second on x86_64 and $0.0000133334 per
GB-second on Arm (arm64, Graviton), 20% less. The pipeline's functions run on arm64
(``constructs_lib.function.DEFAULT_ARCHITECTURE``); the x86_64 figure is kept for comparison, at the
same assumed duration (a pure-Python handler that mostly waits on AWS calls runs about as fast on
either).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PRICES_AS_OF = "2026-11-21"
LAMBDA_PER_MILLION_REQUESTS = 0.20  # x86_64 and arm64 alike
#: Lambda duration, USD per GB-second, by architecture (us-east-1, first tier).
LAMBDA_PER_GB_SECOND = {"arm64": 0.0000133334, "x86_64": 0.0000166667}
#: The architecture the stack deploys (every function; asserted by tests/infra/test_layers.py).
LAMBDA_ARCHITECTURE = "arm64"
DYNAMODB_PER_MILLION_WRU = 0.625  # on-demand
DYNAMODB_PER_MILLION_RRU = 0.125  # on-demand
SQS_PER_MILLION_REQUESTS = 0.40  # standard queue
STANDARD_PER_THOUSAND_TRANSITIONS = 0.025
EXPRESS_PER_MILLION_REQUESTS = 1.00
EXPRESS_PER_GB_SECOND = 0.00001667  # first 1,000 h tier, billed at 64 MB minimum
#: Assumptions, not measurements: average billed Lambda duration and memory, Express duration.
ASSUMED_LAMBDA_MS = 100
ASSUMED_LAMBDA_MB = 512
ASSUMED_EXPRESS_SECONDS = 2.0
EXPRESS_MEMORY_GB = 0.0625

WRITE_OPS = {"PutItem": 1, "UpdateItem": 1, "DeleteItem": 1, "TransactWriteItems": 2, "BatchWriteItem": 1}
#: Per request. BatchGetItem consumes per item (up to 100); counted as one here, it under-counts the
#: sweeper's reconciliation filter (order_domain.reconcile_reads: each terminal order read about three
#: times, strongly consistent): at most 3 read units per order, under $0.40 per million orders.
READ_OPS = {"GetItem": 1, "Query": 1, "Scan": 1, "TransactGetItems": 2, "BatchGetItem": 1}

EXPRESS_TRADE_OFFS = (
    "at-least-once execution: a step may run twice; every step is idempotent on "
    "<order>#<operation>#attempt-N and the outcome write is a conditional UpdateItem that never moves an "
    "order backwards, so no side effect repeats (the repeat costs work, not money)",
    "no execution-name deduplication: a duplicate that gets past intake's idempotency record starts a second "
    "execution of the same attempt; its steps get the first one's recorded results (or wait on its "
    "in-progress record) and StaleAttempt still refuses an older attempt, so nothing repeats, but both "
    "executions are billed and `ops repair` loses its name guard",
    "5-minute maximum duration: the timeout budgeted from the saga's retry policies (the SagaTimeoutSeconds "
    "output, about 30 minutes) does not fit; retries must shrink, and a saga cut mid-compensation is "
    "left to the sweeper",
    "no execution history, ListExecutions or DescribeExecution: `ops trace` and `ops repair` lose the "
    "per-step timeline and the is-it-running check (CloudWatch Logs only; the input carries references "
    "only, so customer data stays out of them)",
    "no RedriveExecution and no .sync/.waitForTaskToken callback integrations",
)


@dataclass(frozen=True)
class PerOrder:
    lambda_invocations: float
    dynamodb_wru: float
    dynamodb_rru: float
    sqs_requests: float
    state_transitions: float


def per_order(operations: dict[str, int], lambda_invocations: int, state_transitions: int, orders: int) -> PerOrder:
    """Units per order; DynamoDB units assume items under 1 KB (writes) / 4 KB (reads)."""
    wru = sum(n * WRITE_OPS.get(op.split(":", 1)[1], 0) for op, n in operations.items() if op.startswith("dynamodb:"))
    rru = sum(n * READ_OPS.get(op.split(":", 1)[1], 0) for op, n in operations.items() if op.startswith("dynamodb:"))
    sqs = sum(n for op, n in operations.items() if op.startswith("sqs:"))
    return PerOrder(
        lambda_invocations=lambda_invocations / orders,
        dynamodb_wru=wru / orders,
        dynamodb_rru=rru / orders,
        sqs_requests=sqs / orders,
        state_transitions=state_transitions / orders,
    )


def lambda_dollars_per_million_orders(units: PerOrder, architecture: str = LAMBDA_ARCHITECTURE) -> float:
    """Lambda requests + duration per million orders on ``architecture`` (``arm64`` or ``x86_64``)."""
    gb_s = ASSUMED_LAMBDA_MS / 1000 * ASSUMED_LAMBDA_MB / 1024
    per_invocation = LAMBDA_PER_MILLION_REQUESTS + gb_s * LAMBDA_PER_GB_SECOND[architecture] * 1e6
    return units.lambda_invocations * per_invocation


def dollars_per_million_orders(units: PerOrder) -> dict[str, Any]:
    """USD per million orders, Standard and Express, with Lambda on arm64 (x86_64 alongside)."""
    others = (
        units.dynamodb_wru * DYNAMODB_PER_MILLION_WRU
        + units.dynamodb_rru * DYNAMODB_PER_MILLION_RRU
        + units.sqs_requests * SQS_PER_MILLION_REQUESTS
    )
    lambda_usd = {arch: lambda_dollars_per_million_orders(units, arch) for arch in LAMBDA_PER_GB_SECOND}
    standard = units.state_transitions * STANDARD_PER_THOUSAND_TRANSITIONS * 1000
    express = EXPRESS_PER_MILLION_REQUESTS + ASSUMED_EXPRESS_SECONDS * EXPRESS_MEMORY_GB * EXPRESS_PER_GB_SECOND * 1e6
    common = others + lambda_usd[LAMBDA_ARCHITECTURE]
    x86 = others + lambda_usd["x86_64"]
    return {
        "prices_as_of": PRICES_AS_OF,
        "lambda_architecture": LAMBDA_ARCHITECTURE,
        "standard_workflow": round(common + standard, 2),
        "express_workflow": round(common + express, 2),
        "of_which_step_functions": {"standard": round(standard, 2), "express": round(express, 2)},
        "of_which_lambda": {arch: round(usd, 2) for arch, usd in lambda_usd.items()},
        "by_service": {
            "lambda": round(lambda_usd[LAMBDA_ARCHITECTURE], 2),
            "dynamodb": round(
                units.dynamodb_wru * DYNAMODB_PER_MILLION_WRU + units.dynamodb_rru * DYNAMODB_PER_MILLION_RRU, 2
            ),
            "sqs": round(units.sqs_requests * SQS_PER_MILLION_REQUESTS, 2),
            "step_functions_standard": round(standard, 2),
            "step_functions_express": round(express, 2),
        },
        # The same orders with every function on x86_64: what arm64 saves.
        "x86_64_for_comparison": {
            "standard_workflow": round(x86 + standard, 2),
            "express_workflow": round(x86 + express, 2),
            "arm64_saves": round(lambda_usd["x86_64"] - lambda_usd[LAMBDA_ARCHITECTURE], 2),
        },
        "assumptions": {
            "lambda_ms": ASSUMED_LAMBDA_MS,
            "lambda_mb": ASSUMED_LAMBDA_MB,
            "express_seconds": ASSUMED_EXPRESS_SECONDS,
        },
        "express_trade_offs": list(EXPRESS_TRADE_OFFS),
    }
