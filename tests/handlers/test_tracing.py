"""Tracing on (as in Lambda): AWS calls are subsegments, each SQS record's correlation ID an
annotation, and no customer data reaches X-Ray. Run in a subprocess: the tracer patches botocore."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from lambda_resilience.tracing import tracing_enabled

SCRIPT = Path(__file__).resolve().parent / "scripts" / "traced_intake.py"
TRACE_HEADER = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"


def _run_traced(order: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "POWERTOOLS_"))},
        "LAMBDA_TASK_ROOT": str(tmp_path),
        "_X_AMZN_TRACE_ID": TRACE_HEADER,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "POWERTOOLS_SERVICE_NAME": "intake",
    }
    done = subprocess.run(
        [sys.executable, str(SCRIPT), json.dumps(order)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    line = next(x for x in reversed(done.stdout.splitlines()) if x.startswith("XRAY-RESULT "))
    return dict(json.loads(line.removeprefix("XRAY-RESULT ")))


def test_tracing_intake_records_aws_calls_and_correlation_ids_without_customer_data(order_factory, tmp_path):
    order = order_factory(
        payment_token="tok_visa_TRACE_SECRET",
        shipping_address={"name": "Trace Person", "line1": "1 Trace St", "city": "X", "postcode": "1", "country": "GB"},
    )

    result = _run_traced(order, tmp_path)

    assert result["response"] == {"batchItemFailures": []}
    assert {"## handler", "## record", "dynamodb", "states"} <= set(result["names"])
    correlation_ids = {a["correlation_id"] for a in result["annotations"] if "correlation_id" in a}
    assert correlation_ids == {"cid-traced-0", "cid-traced-1", "cid-traced-2"}  # worker threads joined the trace
    for secret in ("tok_visa_TRACE_SECRET", "Trace Person", "1 Trace St"):
        assert secret not in result["raw"]


def test_tracing_is_off_outside_lambda_and_when_disabled():
    assert tracing_enabled({"LAMBDA_TASK_ROOT": "/var/task"})
    assert not tracing_enabled({})
    assert not tracing_enabled({"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "true"})
