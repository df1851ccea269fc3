"""Middleware benchmark: prints figures and writes reports/bench-results.json. Not a test: ratios are
measured in one run on one machine, so noise affects both sides alike.

Figures:
- ddb_calls_per_new_event / ddb_calls_per_duplicate: DynamoDB calls our idempotency makes.
- overhead_ratio_vs_powertools: per-event time of our middleware over plain Powertools
  ``idempotent_function`` (same events, same moto, payload validation on in both).
- batch_latency_ratio_vs_powertools: a 10-record SQS batch where every AWS call is a 5 ms round
  trip; ours (records concurrently) over Powertools BatchProcessor + idempotent_function (one after
  another). The network is simulated on each side's own botocore client: a ``before-send`` hook
  (botocore's public event API) sleeps 5 ms and returns a canned DynamoDB response, so the real
  request path runs (serialization, signing, parsing, Powertools) and nothing else does: no
  DynamoDB emulator competes for the CPU. Measured three times in a row
  (``batch_latency_ratio_runs``); the headline figure is the worst of the three.
- usd_per_million_orders_all_in (with its parts): the whole bill of the business-mix run, the pipeline's
  own resources plus REST API, CloudWatch Logs, custom metrics, traces, KMS and Secrets Manager, with
  the levers chosen in decision 0022 (``harness.reporting.costs_all_in``); ``..._before_levers``: the same
  run's counts priced as the stack was before issue 30; ``..._warn_app_logs``: the further lever not
  taken (the functions' INFO lines dropped in prod).
- import_time_ratio_vs_boto3: a handler module's import time over ``import boto3``, fresh processes
  (tracing off, as in the local run). traced_vs_untraced_import_ratio (issue 30's target, <= 1.3): the
  handler as deployed (decision 0019: AWS's OpenTelemetry layer in fast-start mode with its library
  instrumentations off, on the layer's real package set: aws-opentelemetry-distro from PyPI,
  ``requirements-otel-layer.txt``) over the untraced handler, each round against its own round; the
  other setups beside it (``_<variant>``): ``api_only`` (dev without the layer), ``fast_start_botocore``
  (fast start with the AWS SDK instrumented), ``fast_start_default`` (fast start as the layer ships it:
  botocore, requests, urllib3), ``layer_default`` (the layer's default path: opentelemetry-instrument,
  AWS's distro and configurator, Application Signals). tracing_cold_start_ms: deployed minus untraced.
  CPU time of the import in 25 interleaved rounds; each ratio is the median of the rounds' ratios
  (this machine's noise moved 9-run medians by up to 0.1), every side from bytecode caches.
"""

from __future__ import annotations

import json
import logging
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
os.environ.update(
    {
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_METRICS_NAMESPACE": "Bench",
        "POWERTOOLS_TRACE_DISABLED": "true",
    }
)

import boto3  # noqa: E402
from aws_lambda_powertools import Logger, Metrics  # noqa: E402
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response  # noqa: E402
from aws_lambda_powertools.utilities.idempotency import (  # noqa: E402
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from botocore.awsrequest import AWSResponse  # noqa: E402
from moto import mock_aws  # noqa: E402

from lambda_resilience.aws import reset_clients  # noqa: E402
from lambda_resilience.batch import process_sqs_batch  # noqa: E402
from lambda_resilience.correlation import correlation_scope  # noqa: E402
from lambda_resilience.idempotency import IdempotentOperation  # noqa: E402
from lambda_resilience.testing import FakeLambdaContext, serialised_dynamodb  # noqa: E402
from tools.bench_imports import VARIANTS, import_ratio  # noqa: E402

# tools.transitions_by_path runs the bench's mix with the bench's environment (set above): it imports these here.
from tools.bench_pipeline import BUSINESS_MIX as BUSINESS_MIX  # noqa: E402
from tools.bench_pipeline import PIPELINE_ORDERS as PIPELINE_ORDERS  # noqa: E402
from tools.bench_pipeline import pipeline_figures  # noqa: E402

TTL = 24 * 3600
ROUND_TRIP_SECONDS = 0.005
EVENTS = 200
BATCHES = 30
BATCH_RUNS = 3


def _table(name: str) -> str:
    boto3.client("dynamodb").create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return name


def _quiet_logger() -> Logger:
    return Logger(service=f"bench-{uuid.uuid4().hex[:6]}", logger_handler=logging.NullHandler())


def _work(payload: dict[str, Any]) -> dict[str, Any]:
    return {"charged": payload["amount"]}


def _ours(
    table: str, metrics: Metrics | None = None, client: Any | None = None
) -> tuple[Callable[..., Any], Logger, IdempotentOperation]:
    logger = _quiet_logger()
    op = IdempotentOperation(table, ttl_seconds=TTL, logger=logger, metrics=metrics, boto3_client=client)

    def effect(command: dict[str, Any]) -> dict[str, Any]:
        return _work(command["payload"])

    return op(effect), logger, op


def _plain(table: str) -> Callable[..., Any]:
    persistence = DynamoDBPersistenceLayer(table_name=table)
    config = IdempotencyConfig(
        event_key_jmespath="idempotency_key", payload_validation_jmespath="payload", expires_after_seconds=TTL
    )

    @idempotent_function(data_keyword_argument="command", persistence_store=persistence, config=config)
    def effect(command: dict[str, Any]) -> dict[str, Any]:
        return _work(command["payload"])

    return effect


def _commands(n: int, prefix: str) -> list[dict[str, Any]]:
    return [{"idempotency_key": f"{prefix}-{i}#charge-payment#attempt-1", "payload": {"amount": i}} for i in range(n)]


def ddb_calls() -> tuple[float, float]:
    run, _, op = _ours(_table("calls"))
    calls: list[str] = []
    op.persistence.client.meta.events.register("before-call.dynamodb", lambda model, **_: calls.append(model.name))
    ctx: Any = FakeLambdaContext()
    cmds = _commands(50, "calls")
    for c in cmds:
        run(c, ctx)
    new = len(calls) / len(cmds)
    calls.clear()
    for c in cmds:
        run(c, ctx)
    return new, len(calls) / len(cmds)


def overhead_ratio() -> dict[str, float]:
    ours, logger, _ = _ours(_table("ours"))
    plain = _plain(_table("plain"))
    ctx: Any = FakeLambdaContext()

    def time_ours(cmds: list[dict[str, Any]]) -> float:
        start = time.perf_counter()
        for c in cmds:
            with correlation_scope(logger, "bench"):
                ours(c, ctx)
        return (time.perf_counter() - start) / len(cmds)

    def time_plain(cmds: list[dict[str, Any]]) -> float:
        start = time.perf_counter()
        for c in cmds:
            plain(command=c)
        return (time.perf_counter() - start) / len(cmds)

    # Warm both, then interleave rounds so drift hits both sides.
    time_ours(_commands(20, "warm-o"))
    time_plain(_commands(20, "warm-p"))
    ours_t, plain_t = [], []
    for r in range(5):
        ours_t.append(time_ours(_commands(EVENTS // 5, f"o{r}")))
        plain_t.append(time_plain(_commands(EVENTS // 5, f"p{r}")))
    o, p = statistics.median(ours_t), statistics.median(plain_t)
    return {"ours_ms_per_event": o * 1000, "powertools_ms_per_event": p * 1000, "ratio": o / p}


def _sqs_event(prefix: str) -> dict[str, Any]:
    records = []
    for i in range(10):
        body = {"idempotency_key": f"{prefix}-{i}#intake#attempt-1", "payload": {"amount": i}}
        records.append(
            {
                "messageId": str(uuid.uuid4()),
                "receiptHandle": "rh",
                "body": json.dumps(body),
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {"correlation_id": {"stringValue": f"cid-{prefix}-{i}", "dataType": "String"}},
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:orders",
            }
        )
    return {"Records": records}


class _CannedBody:
    """The raw body of a canned response (what ``AWSResponse.content`` reads)."""

    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any) -> Any:
        yield self.body


def simulated_network(client: Any, round_trip_seconds: float = ROUND_TRIP_SECONDS) -> Any:
    """``client`` with every request answered after ``round_trip_seconds`` by a canned success.

    A ``before-send`` handler that returns a response replaces the HTTP send (botocore's public
    event API). ``{}`` is a valid DynamoDB answer to PutItem (new record) and UpdateItem (saved).
    """

    def send(request: Any, **_: Any) -> AWSResponse:
        time.sleep(round_trip_seconds)
        headers = {"x-amzn-requestid": "bench", "content-type": "application/x-amz-json-1.0"}
        return AWSResponse(request.url, 200, headers, _CannedBody(b"{}"))

    client.meta.events.register("before-send.dynamodb", send)
    return client


def _dynamodb_client() -> Any:
    return boto3.session.Session().client("dynamodb", region_name="us-east-1")


def batch_ratio() -> dict[str, float]:
    """One run: BATCHES batches per side, interleaved; ratio of the medians."""
    ours, logger, _ = _ours("batch-ours", client=simulated_network(_dynamodb_client()))
    plain_persistence = DynamoDBPersistenceLayer(
        table_name="batch-plain", boto3_client=simulated_network(_dynamodb_client())
    )
    config = IdempotencyConfig(event_key_jmespath="idempotency_key", payload_validation_jmespath="payload")

    @idempotent_function(data_keyword_argument="command", persistence_store=plain_persistence, config=config)
    def plain_effect(command: dict[str, Any]) -> dict[str, Any]:
        return _work(command["payload"])

    ctx: Any = FakeLambdaContext()
    config.register_lambda_context(ctx)  # both sides write an in-progress expiry

    def run_ours(event: dict[str, Any]) -> float:
        start = time.perf_counter()
        response = process_sqs_batch(event, ctx, lambda r, cid: ours(json.loads(r.body), ctx), logger=logger)
        elapsed = time.perf_counter() - start
        if response["batchItemFailures"]:
            raise RuntimeError(f"benchmark batch had failures: {response}")
        return elapsed

    def run_plain(event: dict[str, Any]) -> float:
        processor = BatchProcessor(event_type=EventType.SQS)
        start = time.perf_counter()
        response = process_partial_response(
            event=event,
            record_handler=lambda record: plain_effect(command=json.loads(record.body)),
            processor=processor,
            context=ctx,
        )
        elapsed = time.perf_counter() - start
        if response["batchItemFailures"]:
            raise RuntimeError(f"benchmark batch had failures: {response}")
        return elapsed

    run_ours(_sqs_event("warm-o"))
    run_plain(_sqs_event("warm-p"))
    ours_t, plain_t = [], []
    for i in range(BATCHES):  # interleaved, so machine noise hits both sides alike
        ours_t.append(run_ours(_sqs_event(f"o{i}")))
        plain_t.append(run_plain(_sqs_event(f"p{i}")))
    o, p = statistics.median(ours_t), statistics.median(plain_t)
    return {"ours_ms_per_batch": o * 1000, "powertools_ms_per_batch": p * 1000, "ratio": o / p}


#: The pipeline's figures the results carry at their top level.
PIPELINE_KEYS = (
    "lambda_invocations_per_order",
    "state_transitions_per_order",
    "lambda_invocations_per_order_mix",
    "state_transitions_per_order_mix",
    "usd_per_million_orders_standard",
    "usd_per_million_orders_express",
    "usd_per_million_orders_all_in",
    "usd_per_million_orders_all_in_parts",
    "usd_per_million_orders_all_in_before_levers",
    "usd_per_million_orders_all_in_warn_app_logs",
)
#: The figures printed, in this order (then the details).
PRINTED = (
    "ddb_calls_per_new_event",
    "ddb_calls_per_duplicate",
    "overhead_ratio_vs_powertools",
    "batch_latency_ratio_vs_powertools",
    "batch_latency_ratio_runs",
    "import_time_ratio_vs_boto3",
    "import_time_ratio_vs_boto3_traced",
    "tracing_cold_start_ms",
    "traced_vs_untraced_import_ratio",
    *(f"traced_vs_untraced_import_ratio_{variant}" for variant in VARIANTS),
    *PIPELINE_KEYS,
)


def main() -> None:
    results: dict[str, Any] = {}
    with mock_aws(), serialised_dynamodb():
        reset_clients()
        new, dup = ddb_calls()
        results["ddb_calls_per_new_event"] = new
        results["ddb_calls_per_duplicate"] = dup
        overhead = overhead_ratio()
    batches = [batch_ratio() for _ in range(BATCH_RUNS)]  # consecutive runs, no emulator involved
    imports = import_ratio()
    pipeline = pipeline_figures()
    results["overhead_ratio_vs_powertools"] = round(overhead["ratio"], 3)
    results["batch_latency_ratio_runs"] = [round(b["ratio"], 3) for b in batches]
    results["batch_latency_ratio_vs_powertools"] = max(results["batch_latency_ratio_runs"])
    results.update(_import_results(imports))
    for key in PIPELINE_KEYS:
        results[key] = pipeline[key]
    results["details"] = {
        "pipeline": {"usd": pipeline["usd_detail"], "orders": pipeline["orders"]},
        "all_in": pipeline["all_in_detail"],
        "overhead": {k: round(v, 3) for k, v in overhead.items()},
        "batch_runs": [{k: round(v, 3) for k, v in batch.items()} for batch in batches],
        "imports": {k: round(v, 3) for k, v in imports.items()},
        "round_trip_ms": ROUND_TRIP_SECONDS * 1000,
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
    }
    out = REPO / "reports" / "bench-results.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    for key in PRINTED:
        print(f"{key:<36} {results[key]}")
    print(json.dumps(results["details"], indent=2))
    print(f"written to {out}")


def _import_results(imports: dict[str, float]) -> dict[str, Any]:
    """The import-time figures the results carry at their top level (rounded)."""
    results: dict[str, Any] = {}
    results["import_time_ratio_vs_boto3"] = round(imports["handler_ratio"], 3)
    results["import_time_ratio_vs_boto3_traced"] = round(imports["handler_traced_ratio"], 3)
    results["tracing_cold_start_ms"] = round(imports["tracing_cold_start_ms"], 1)
    results["traced_vs_untraced_import_ratio"] = round(imports["handler_traced_vs_untraced"], 3)
    for variant in VARIANTS:
        results[f"import_time_ratio_vs_boto3_traced_{variant}"] = round(imports[f"handler_traced_{variant}_ratio"], 3)
        results[f"traced_vs_untraced_import_ratio_{variant}"] = round(
            imports[f"handler_traced_{variant}_vs_untraced"], 3
        )
    return results


if __name__ == "__main__":
    main()
