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
  the levers chosen in decision 0022 (``harness.costs_all_in``); ``..._before_levers``: the same
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
import subprocess
import sys
import tempfile
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

import order_domain.env as env_names  # noqa: E402
from lambda_resilience.aws import reset_clients  # noqa: E402
from lambda_resilience.batch import process_sqs_batch  # noqa: E402
from lambda_resilience.correlation import correlation_scope  # noqa: E402
from lambda_resilience.idempotency import IdempotentOperation  # noqa: E402
from lambda_resilience.testing import FakeLambdaContext, serialised_dynamodb  # noqa: E402

TTL = 24 * 3600
ROUND_TRIP_SECONDS = 0.005
EVENTS = 200
BATCHES = 30
BATCH_RUNS = 3
IMPORT_RUNS = 25


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


#: The intake function's code: the measured interpreters' working directory (first on their import path).
INTAKE_DIR = REPO / "lambdas" / "intake"
#: Bytecode caches for the import measurements (see :func:`_import_seconds`).
_PYCACHE = tempfile.mkdtemp(prefix="bench-pycache-")


def _import_seconds(code: str, extra_env: dict[str, str] | None = None) -> float:
    """CPU seconds ``code`` takes in a fresh interpreter (imports: the cold start's own work).

    CPU time, not wall time: importing is CPU-bound, and CPU time does not count the time the
    process waited for a core (other processes on a shared 2-core machine), so the ratio holds
    under load.

    Every side imports from bytecode caches, as any Python install does after the first import:
    they live in a scratch directory (``PYTHONPYCACHEPREFIX``), written by a first unmeasured run.
    Without it, an environment with ``PYTHONDONTWRITEBYTECODE`` set would recompile the project's
    sources - and only those, site-packages ship compiled - on every measured run.
    """
    env = {
        **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
        **(extra_env or {}),
        "PYTHONPYCACHEPREFIX": _PYCACHE,
        env_names.IDEMPOTENCY_TABLE_NAME: "t",
        env_names.ORDERS_TABLE_NAME: "t",
        env_names.STATE_MACHINE_ARN: "arn:aws:states:us-east-1:123456789012:stateMachine:s",
        "POWERTOOLS_SERVICE_NAME": "intake",
    }
    script = f"import time\nt = time.process_time()\n{code}\nprint(time.process_time() - t)"
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=INTAKE_DIR, env=env, capture_output=True, text=True, check=True
    )
    return float(out.stdout.strip().splitlines()[-1])


#: AWS's OpenTelemetry layer's /opt/python, as its build leaves it (``make setup``: requirements-otel-layer.txt).
OTEL_LAYER_PACKAGES = REPO / ".venv" / "otel-distro"
#: What the layer's ``otel-instrument`` exports before Python starts (read in its source,
#: aws-observability/aws-otel-python-instrumentation ``lambda-layer/src/otel-instrument``).
_OTEL_INSTRUMENT_ENV = {
    "OTEL_SERVICE_NAME": "intake",
    "AWS_LAMBDA_FUNCTION_NAME": "intake",
    "AWS_REGION": "us-east-1",
    "OTEL_PROPAGATORS": "baggage,xray,tracecontext",
    "OTEL_AWS_APPLICATION_SIGNALS_RUNTIME_ENABLED": "false",
    "OTEL_METRICS_EXPORTER": "none",
    "OTEL_LOGS_EXPORTER": "none",
    "OTEL_AWS_APPLICATION_SIGNALS_ENABLED": "true",
    "OTEL_PYTHON_DISTRO": "aws_distro",
    "OTEL_PYTHON_CONFIGURATOR": "aws_configurator",
}
#: The layer's default instrumentation denylist (its otel-instrument), plus aws-lambda (the wrapper's own).
_DISTRO_DISABLED = (
    "aio-pika,aiohttp-client,aiohttp-server,aiopg,asgi,asyncio,asyncpg,boto,boto3,cassandra,celery,"
    "confluent_kafka,dbapi,django,falcon,fastapi,flask,grpc_client,grpc_server,grpc_aio_client,grpc_aio_server,"
    "httpx,jinja2,kafka,logging,mysql,mysqlclient,pika,psycopg,psycopg2,pymemcache,pymongo,pymysql,pyramid,redis,"
    "remoulade,requests,sklearn,sqlalchemy,sqlite3,starlette,system_metrics,threading,tornado,tortoiseorm,wsgi,"
    "openai_agents,aws_openai_agents,aws_crewai,aws_langchain,aws_mcp,aws_llama-index,aws-lambda"
)
#: The full path: ``opentelemetry-instrument``'s sitecustomize (distro, configurator, every installed
#: instrumentation not disabled), then the layer's otel_wrapper (the aws-lambda instrumentation).
_FULL = (
    "from opentelemetry.instrumentation.auto_instrumentation import initialize\ninitialize()\n"
    "from opentelemetry.instrumentation.aws_lambda import AwsLambdaInstrumentor\n"
    "AwsLambdaInstrumentor().instrument()\n"
)
#: Fast start (``OTEL_AWS_LAMBDA_FAST_START=true``): otel_wrapper runs the distro's lite SDK
#: (TracerProvider, batching processor, UDP exporter to the X-Ray daemon; botocore/requests/urllib3
#: instrumentations unless disabled), then the aws-lambda instrumentation.
_FAST = (
    "from amazon.opentelemetry.distro.opentelemetry_lite_sdk import configure_lite_mode\nconfigure_lite_mode()\n"
    "from opentelemetry.instrumentation.aws_lambda import AwsLambdaInstrumentor\n"
    "AwsLambdaInstrumentor().instrument()\n"
)
#: What our code loads at the first invocation with tracing on (lambda_resilience.tracing imports
#: OpenTelemetry lazily): the API's tracer and the W3C propagator. Part of the cold start all the same.
_FIRST_SPAN = "import lambda_resilience.tracing as tracing\ntracing._tracer(); tracing._w3c()"
_LAYER_ENV = {**_OTEL_INSTRUMENT_ENV, "PYTHONPATH": str(OTEL_LAYER_PACKAGES)}


def import_cases() -> dict[str, tuple[str, bool, dict[str, str]]]:
    """The measured imports: name -> (code, tracing on, environment). ``handler_traced``: as deployed
    (decision 0019: the layer's fast start, our spans only), on the layer's real package set."""
    load = f"import handler\n{_FIRST_SPAN}"
    fast = {**_LAYER_ENV, "OTEL_AWS_LAMBDA_FAST_START": "true"}
    return {
        "boto3": ("import boto3", False, {}),
        # As in the local run: tracing off, OpenTelemetry never imported.
        "handler": ("import handler", False, {}),
        # dev without AWS's layer: tracing on, the API only (no-op spans, context carried).
        "handler_traced_api_only": (load, True, {}),
        # As deployed: fast start without library instrumentations (stacks/order_constructs/functions.py).
        "handler_traced": (
            _FAST + load,
            True,
            {**fast, "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "botocore,requests,urllib3"},
        ),
        # The other setups, measured on the same packages:
        "handler_traced_fast_start_botocore": (
            _FAST + load,
            True,
            {**fast, "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "requests,urllib3"},
        ),
        "handler_traced_fast_start_default": (_FAST + load, True, fast),
        "handler_traced_layer_default": (
            _FULL + load,
            True,
            {**_LAYER_ENV, "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": _DISTRO_DISABLED},
        ),
    }


#: The traced setups measured beside the deployed one (``import_cases``).
VARIANTS = ("api_only", "fast_start_botocore", "fast_start_default", "layer_default")


def import_ratio() -> dict[str, float]:
    """Each case's median CPU time and its ratio to ``import boto3`` (median of the rounds' ratios).

    What Lambda's bootstrap does: the function's directory first on the import path (here: the
    interpreter's working directory, which ``python -c`` puts first), then ``import handler``; with
    tracing on, ``LAMBDA_TASK_ROOT`` is set (lambda_resilience.tracing's rule).
    """
    in_lambda = {"LAMBDA_TASK_ROOT": str(REPO / ".build" / "bench-task-root"), "POWERTOOLS_TRACE_DISABLED": "false"}
    cases = import_cases()
    for code, on, env in cases.values():
        _import_seconds(code, {**env, **(in_lambda if on else {})})  # writes the bytecode caches; not measured
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(IMPORT_RUNS):  # interleaved, fresh processes each time
        for name, (code, on, env) in cases.items():
            samples[name].append(_import_seconds(code, {**env, **(in_lambda if on else {})}))

    def paired(values: list[float]) -> float:
        # Each round's ratio to the same round's `import boto3`, then the median: a slow spell of
        # the shared machine moves both sides of a round, and the median drops the outliers.
        return statistics.median(x / y for x, y in zip(values, samples["boto3"], strict=True))

    figures: dict[str, float] = {"rounds": float(IMPORT_RUNS)}
    for name, values in samples.items():
        figures[f"{name}_ms"] = statistics.median(values) * 1000
        if name != "boto3":
            figures[f"{name}_ratio"] = paired(values)
    figures["tracing_cold_start_ms"] = figures["handler_traced_ms"] - figures["handler_ms"]
    # The target of issue 30: traced over untraced handler import, each round against its own round.
    for name in samples:
        if name.startswith("handler_traced"):
            figures[f"{name}_vs_untraced"] = statistics.median(
                x / y for x, y in zip(samples[name], samples["handler"], strict=True)
            )
    return figures


#: The pipeline runs behind the per-order figures: every order on the happy path, and the business
#: mix of ``make chaos`` (declines, undeliverable addresses, refunds that keep failing) without its
#: infrastructure faults (what a normal day costs).
PIPELINE_ORDERS = 100
HAPPY_MIX = (
    "--decline-rate",
    "0",
    "--ship-fail-rate",
    "0",
    "--out-of-stock-rate",
    "0",
    "--partial-capture-rate",
    "0",
    "--auth-only-rate",
    "0",
    "--refund-flaky-rate",
    "0",
    "--refund-fail-rate",
    "0",
)
BUSINESS_MIX = ("--decline-rate", "0.1", "--ship-fail-rate", "0.1", "--refund-fail-rate", "0.03")


def _pipeline_run(mix: tuple[str, ...], name: str) -> dict[str, Any]:
    """``python -m ops local run`` (the whole pipeline on moto, in a subprocess) and its report."""
    report_file = REPO / ".build" / f"bench-{name}.json"
    report_file.parent.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "ops",
        "local",
        "run",
        "--orders",
        str(PIPELINE_ORDERS),
        "--seed",
        "13",
        *mix,
        "--check",
        "--report-file",
        str(report_file),
    ]
    run = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    if run.returncode != 0:  # say which check failed, not only that the subprocess did
        lines = (run.stdout + run.stderr).splitlines()
        failed = [line for line in lines if line.startswith(("FAIL", "pager:", "invariants:"))]
        raise RuntimeError(f"bench: `{' '.join(command[1:])}` exited {run.returncode}: {failed or run.stderr[-2000:]}")
    report: dict[str, Any] = json.loads(report_file.read_text())
    return report


def pipeline_figures() -> dict[str, Any]:
    """Lambda invocations and state transitions per completed order, and USD per million orders."""
    happy, mixed = _pipeline_run(HAPPY_MIX, "happy"), _pipeline_run(BUSINESS_MIX, "mix")

    def per_completed(report: dict[str, Any], unit: str) -> float:
        orders = report["orders"]
        return float(report["cost"]["per_order"][unit]) * orders["submitted"] / max(1, orders["completed"])

    usd = mixed["cost"]["usd_per_million_orders"]
    bill, before = mixed["cost"]["all_in"], mixed["cost"]["all_in_before_levers"]
    warn = mixed["cost"]["all_in_warn_app_logs"]
    return {
        "usd_per_million_orders_all_in": bill["usd_per_million_orders"],
        "usd_per_million_orders_all_in_parts": bill["items"],
        "usd_per_million_orders_all_in_before_levers": before["usd_per_million_orders"],
        "usd_per_million_orders_all_in_warn_app_logs": warn["usd_per_million_orders"],
        "all_in_detail": {"chosen": bill, "before_levers": before, "warn_app_logs": warn},
        "lambda_invocations_per_order": round(per_completed(happy, "lambda_invocations"), 2),
        "state_transitions_per_order": round(per_completed(happy, "state_transitions"), 2),
        "lambda_invocations_per_order_mix": round(float(mixed["cost"]["per_order"]["lambda_invocations"]), 2),
        "state_transitions_per_order_mix": round(float(mixed["cost"]["per_order"]["state_transitions"]), 2),
        "usd_per_million_orders_standard": usd["standard_workflow"],
        "usd_per_million_orders_express": usd["express_workflow"],
        "usd_detail": usd,
        "orders": {"happy": happy["orders"], "mix": mixed["orders"]},
    }


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
    results["import_time_ratio_vs_boto3"] = round(imports["handler_ratio"], 3)
    results["import_time_ratio_vs_boto3_traced"] = round(imports["handler_traced_ratio"], 3)
    results["tracing_cold_start_ms"] = round(imports["tracing_cold_start_ms"], 1)
    results["traced_vs_untraced_import_ratio"] = round(imports["handler_traced_vs_untraced"], 3)
    for variant in VARIANTS:
        results[f"import_time_ratio_vs_boto3_traced_{variant}"] = round(imports[f"handler_traced_{variant}_ratio"], 3)
        results[f"traced_vs_untraced_import_ratio_{variant}"] = round(
            imports[f"handler_traced_{variant}_vs_untraced"], 3
        )
    for key in (
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
    ):
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
    for key in (
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
    ):
        print(f"{key:<36} {results[key]}")
    print(json.dumps(results["details"], indent=2))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
