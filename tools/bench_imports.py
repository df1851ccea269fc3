"""The bench's import-time figures (``make bench``, :mod:`tools.bench`): a handler module's import time over
``import boto3`` in fresh interpreters, untraced and in each tracing setup (see the bench's docstring)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import order_domain.env as env_names

REPO = Path(__file__).resolve().parent.parent
IMPORT_RUNS = 25
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
