"""``ops smoke`` against ``ops local up``: the acceptance run, through the endpoint only."""

from __future__ import annotations

import os
from collections.abc import Iterator

import boto3
import pytest

import order_domain.env as env_names
from constructs_lib.function import DEFAULT_RUNTIME
from harness.stack.synth import LOCAL_PROVIDER_ORIGIN, synthesize_once, xdist_run_root
from harness.stack.up import UpOptions
from ops.smoke import SmokeOptions, charge_function_environment, format_table, run_smoke
from ops.target import Target
from tests.ops.test_local_up import Served

pytestmark = pytest.mark.e2e

STACK = "OrderPipeline-dev"
REGION = "us-east-1"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    assembly = synthesize_once(xdist_run_root(tmp_path_factory.getbasetemp()), "dev")
    running = Served(UpOptions(port=0, assembly_dir=assembly.outdir, sweep_interval=60.0))
    running.thread.start()
    assert running.ready.wait(60), "local up did not become ready"
    if running.error is not None:
        raise running.error
    yield running
    running.stop.set()
    running.thread.join(timeout=15)
    assert not running.thread.is_alive(), "local up did not stop"


@pytest.fixture
def target(served: Served, monkeypatch: pytest.MonkeyPatch) -> Target:
    assert served.info is not None
    for key in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", os.environ.get("AWS_ACCESS_KEY_ID", "operator"))
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", os.environ.get("AWS_SECRET_ACCESS_KEY", "operator"))
    return Target.from_stack(STACK, region=REGION, endpoint_url=served.info.endpoint_url)


def test_smoke_local_up_passes_and_removes_its_orders(target: Target) -> None:
    report = run_smoke(target, SmokeOptions(timeout_seconds=120.0, alarm_wait_seconds=30.0))
    assert report.passed, format_table(report)
    through_api = {c.name for c in report.checks if "/orders" in c.name}
    assert through_api == {
        "good: POST /orders",
        "duplicate: POST /orders",
        "duplicate (again, same key): POST /orders",
        "no currency: POST /orders",
        "malformed: POST /orders",
        "good: GET /orders/{id}",
    }, format_table(report)
    assert {"no currency: reached the pipeline", "malformed: reached the pipeline"} <= {c.name for c in report.checks}
    # Issue 27: the alarm topic was watched from before the first order; only the forced page reached it.
    assert {c.name: c.observed for c in report.checks}["pages by the smoke's own orders"] == "none"
    orders = boto3.client("dynamodb", endpoint_url=target.endpoint_url, region_name=REGION).scan(
        TableName=target.output("OrdersTableName")
    )["Items"]
    assert not [o for o in orders if o["order_id"]["S"].startswith(f"smoke-{report.run_id}")]


def test_smoke_local_up_function_configuration_is_what_the_function_runs_with(target: Target) -> None:
    """GetFunctionConfiguration names the served provider (not the template's placeholder) and the
    template's runtime: the smoke builds its provider port from it."""
    env = charge_function_environment(target)
    assert env[env_names.PAYMENT_API_URL].startswith("http://127.0.0.1:")
    assert not env[env_names.PAYMENT_API_URL].startswith(LOCAL_PROVIDER_ORIGIN + "/")
    functions = target.client("lambda").list_functions()["Functions"]
    assert {f["Runtime"] for f in functions} == {DEFAULT_RUNTIME.name}
