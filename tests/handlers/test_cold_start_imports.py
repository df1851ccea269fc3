"""What a prod handler's cold start imports: only what its function runs on every invocation.

``make bench`` measures one function's import (intake's) against ``import boto3``, on a shared,
noisy machine: a module added to a handler's import path shows there, if at all, as a drift of a few
hundredths hidden in the noise (docs/results.md). This test pins the import path instead: each
function prod deploys (every ``lambdas/<folder>/handler.py`` but the sandbox providers) is imported
in a fresh interpreter, as Lambda's init does, with prod's settings (HTTPS providers, tracing off as
in the local run), and none of these may be loaded:

- never at a cold start (:data:`NEVER`): dev and test code (the sandbox, ``lambda_resilience.testing``,
  moto, the harness), OpenTelemetry with tracing off, and what loads on first use only (the DLQ replay
  code outside the replay function, the DynamoDB persistence layer of our own, Powertools' data
  masking and validation, the schema compiler);
- not the function's (:data:`NOT_ITS_OWN`): another service's modules. A saga step, invoked by Step
  Functions with one input, loads no SQS batch utility (Powertools' loads ``asyncio`` and every event
  data class: about a tenth of ``import boto3``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import order_domain.env as env_names

from .conftest import LAMBDAS, REGION

#: Functions prod never deploys (tests/handlers/test_import_path.py SANDBOX_FUNCTIONS).
SANDBOX_FUNCTIONS = frozenset({"sandbox_payment", "sandbox_carrier"})
#: Loaded by no prod handler's cold start (a name covers its submodules).
NEVER = (
    "sandbox",
    "lambda_resilience.testing",
    "lambda_resilience.idempotency.persistence",
    "moto",
    "local_cloud",
    "harness",
    "ops",
    "tools",
    "opentelemetry",
    "fastjsonschema",
    "aws_lambda_powertools.utilities.data_masking",
    "aws_lambda_powertools.utilities.validation",
    "aws_xray_sdk",
)
#: SQS batch processing: intake's only.
BATCH = ("lambda_resilience.batch", "aws_lambda_powertools.utilities.batch", "asyncio")
SAGA_STEP = (*BATCH, "lambda_resilience.replay", "order_domain.intake", "order_domain.sweeper")
#: Per function, modules of other functions' services.
NOT_ITS_OWN: dict[str, tuple[str, ...]] = {
    "intake": (
        "lambda_resilience.replay",
        "lambda_resilience.step",
        "order_domain.step",
        "order_domain.https_providers",
        "order_domain.payments",
        "order_domain.shipping",
        "order_domain.inventory",
        "order_domain.sweeper",
        "order_domain.outcomes",
    ),
    "reserve_inventory": (*SAGA_STEP, "order_domain.https_providers", "order_domain.payments"),
    "release_inventory": (*SAGA_STEP, "order_domain.https_providers", "order_domain.payments"),
    "charge_payment": (*SAGA_STEP, "order_domain.inventory", "order_domain.shipping"),
    "refund_payment": (*SAGA_STEP, "order_domain.inventory", "order_domain.shipping"),
    "ship_order": (*SAGA_STEP, "order_domain.inventory"),
    "cancel_shipment": (*SAGA_STEP, "order_domain.inventory"),
    "finalize_order": (*SAGA_STEP, "order_domain.https_providers", "order_domain.inventory"),
    "sweeper": (*BATCH, "lambda_resilience.replay", "order_domain.intake", "order_domain.inventory"),
    "dlq_replay": (*BATCH, "order_domain.intake", "order_domain.https_providers", "order_domain.sweeper"),
    "provider_webhook": (*SAGA_STEP, "order_domain.https_providers", "order_domain.inventory", "order_domain.payments"),
}
_SQS = f"https://sqs.{REGION}.amazonaws.com/123456789012"
#: Prod's settings: HTTPS providers (prod deploys no provider function), every table and queue set.
PROD_ENV = {
    env_names.IDEMPOTENCY_TABLE_NAME: "idempotency",
    env_names.ORDERS_TABLE_NAME: "orders",
    env_names.INVENTORY_TABLE_NAME: "inventory",
    env_names.LEDGER_TABLE_NAME: "ledger",
    env_names.FAILURES_TABLE_NAME: "failures",
    env_names.STATE_MACHINE_ARN: f"arn:aws:states:{REGION}:123456789012:stateMachine:saga",
    env_names.PAYMENT_API_URL: "https://payments.example.com",
    env_names.PAYMENT_API_SECRET_ARN: f"arn:aws:secretsmanager:{REGION}:123456789012:secret:payment",
    env_names.CARRIER_API_URL: "https://carrier.example.com",
    env_names.CARRIER_API_SECRET_ARN: f"arn:aws:secretsmanager:{REGION}:123456789012:secret:carrier",
    env_names.NEEDS_ATTENTION_QUEUE_URL: f"{_SQS}/needs-attention",
    env_names.DEAD_LETTER_QUEUE_URL: f"{_SQS}/orders-dlq",
    env_names.THROTTLE_REQUEUE_QUEUE_URL: f"{_SQS}/orders",
    env_names.WEBHOOK_SECRET_ARN: f"arn:aws:secretsmanager:{REGION}:123456789012:secret:webhook",
    env_names.REPLAY_TARGETS: json.dumps([{"dlq_url": f"{_SQS}/orders-dlq", "source_url": f"{_SQS}/orders"}]),
    "AWS_DEFAULT_REGION": REGION,
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "POWERTOOLS_METRICS_NAMESPACE": "ColdStart",
    "POWERTOOLS_TRACE_DISABLED": "true",
}
_LIST_MODULES = "import json, sys\nimport handler\nprint(json.dumps(sorted(sys.modules)))"


def prod_functions() -> list[str]:
    return sorted(p.parent.name for p in LAMBDAS.glob("*/handler.py") if p.parent.name not in SANDBOX_FUNCTIONS)


def cold_start_modules(code_dir: Path, env: dict[str, str]) -> set[str]:
    """``sys.modules`` after ``import handler`` in a fresh interpreter started in ``code_dir``."""
    child = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "LAMBDA_TASK_ROOT", "AWS_ENDPOINT"))}
    child.update({**env, "POWERTOOLS_SERVICE_NAME": code_dir.name})
    done = subprocess.run(
        [sys.executable, "-c", _LIST_MODULES], cwd=code_dir, env=child, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """Which of ``names`` (each with its submodules) ``modules`` holds."""
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


def test_cold_start_imports_cover_every_prod_function() -> None:
    assert set(prod_functions()) == set(NOT_ITS_OWN)


@pytest.mark.parametrize("function", prod_functions())
def test_cold_start_imports_only_what_the_function_runs(function: str) -> None:
    modules = cold_start_modules(LAMBDAS / function, PROD_ENV)

    assert "order_domain.wiring" in modules and "lambda_resilience.tracing" in modules  # the handler did load
    assert loaded(modules, NEVER) == []
    assert loaded(modules, NOT_ITS_OWN[function]) == []


def test_cold_start_imports_a_leak_is_found(tmp_path: Path) -> None:
    """The check can fail: a handler whose import path reaches first-use code and the batch utility."""
    (tmp_path / "handler.py").write_text(
        "import order_domain.wiring\nimport lambda_resilience.tracing\n"
        "from lambda_resilience import replay\nfrom lambda_resilience.batch import process_sqs_batch\n"
    )
    modules = cold_start_modules(tmp_path, PROD_ENV)

    assert loaded(modules, NEVER) == []
    assert "lambda_resilience.replay" in loaded(modules, NOT_ITS_OWN["charge_payment"])
    assert {"asyncio", "aws_lambda_powertools.utilities.batch.base"} <= set(loaded(modules, BATCH))
