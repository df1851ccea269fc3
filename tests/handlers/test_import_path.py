"""What prod imports: every handler imported and invoked on the import path Lambda builds for it.

**Deployed with AWS's OpenTelemetry layer** (prod, and any stage given ``otel_layer_arn``), Lambda
runs the layer's wrapper (``AWS_LAMBDA_EXEC_WRAPPER=/opt/otel-instrument``), which exports
``PYTHONPATH="$LAMBDA_RUNTIME_DIR:/opt/python:$PYTHONPATH"`` before starting Python (read in the
layer's source: aws-observability/aws-otel-python-instrumentation ``lambda-layer/src/otel-instrument``;
its Dockerfile also deletes ``urllib3`` from the layer). So the function's directory comes first, then
**the runtime's own bundle**, then ``/opt/python`` (the layers merged in their order, later over
earlier: https://docs.aws.amazon.com/lambda/latest/dg/adding-layers.html), then the standard library.
Whatever the runtime bundles shadows what we pin in ``lambdas/requirements.txt``.

**Without the wrapper** (dev without that layer), Lambda's own order applies: the function's
directory, ``/opt/python``, then the runtime's libraries
(https://docs.aws.amazon.com/lambda/latest/dg/python-package.html#python-package-searchpath): our pins win.

The runtime's bundle is modelled from ``requirements-lambda-runtime.txt`` (urllib3 1.26.19 and 2.6.3,
both seen in the python3.13 image, cited there; jmespath 1.0.1) plus boto3 and its other
dependencies (boto3, botocore, s3transfer, python-dateutil, six: the runtime's SDK, which we never
ship). Our layers are staged by the very constructs the stack deploys (``OrderLayers``). Each case
runs in a fresh interpreter started with ``-P -S`` and ``PYTHONPATH`` set to the modelled directories
(what the wrapper exports): only they and the standard library are importable, and a module loaded
from anywhere else fails the test.

The code must work whichever urllib3 the runtime holds, since in prod the runtime's wins: the HTTPS
provider adapter uses only API common to urllib3 1.26 and 2.x. The test proves it by running the
steps that call a provider over HTTP (the sandbox served on 127.0.0.1, as in the local run) on each
snapshot, and asserts which urllib3 actually ran.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import boto3
import pytest
from aws_cdk import App, Environment, Stack
from moto.server import ThreadedMotoServer

import order_domain.env as env_names
from sandbox.http_server import ProviderEndpoints, serve_sandbox
from stacks.order_constructs.layers import OrderLayers, OrderLayersProps

from .conftest import LAMBDAS, REGION, ROOT, Inventory, Tables, make_sqs_record

DRIVER = Path(__file__).with_name("import_path_driver.py")
RUNTIME_MODEL = ROOT / "requirements-lambda-runtime.txt"
RUNTIME_PACKAGES = ROOT / ".venv" / "lambda-runtime"
#: The runtime's SDK (never in our layers): linked from this environment into the modelled runtime directory.
RUNTIME_SDK = ("boto3", "botocore", "s3transfer", "python-dateutil", "six")
#: AWS's OpenTelemetry layer's /opt/python as its build leaves it (``make setup``: requirements-otel-layer.txt,
#: urllib3 deleted as the layer's Dockerfile does).
OTEL_LAYER_PACKAGES = ROOT / ".venv" / "otel-distro"
#: What the layer's otel_wrapper.py runs before importing the handler in fast-start mode (decision 0019).
FAST_START = {
    "OTEL_AWS_LAMBDA_FAST_START": "true",
    "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "botocore,requests,urllib3",
    "AWS_XRAY_DAEMON_ADDRESS": "127.0.0.1:2000",  # Lambda's daemon; here nothing listens (UDP: no error)
}
OTEL_LAYER_ARN = f"arn:aws:lambda:{REGION}:901920570463:layer:AWSOpenTelemetryDistroPython:18"
SANDBOX_FUNCTIONS = ("sandbox_payment", "sandbox_carrier")


def _snapshots() -> list[dict[str, str]]:
    """Runtime snapshots: each urllib3 of the model with the model's other packages."""
    specs = [line.split("==") for line in RUNTIME_MODEL.read_text().splitlines() if line[:1].isalpha()]
    others = {name: version for name, version in specs if name != "urllib3"}
    return [{"urllib3": version, **others} for name, version in specs if name == "urllib3"]


def _link_distribution(name: str, target: Path) -> None:
    """Symlink the top-level entries (packages, modules, dist-info) of an installed distribution."""
    dist = metadata.distribution(name)
    for top in {Path(str(f)).parts[0] for f in dist.files or () if not str(f).startswith("..")}:
        link = target / top
        if not link.exists() and top != "bin":
            link.symlink_to(Path(str(dist.locate_file(top))))


def _runtime_dir(root: Path, snapshot: dict[str, str]) -> Path:
    target = root / ("runtime-" + "-".join(f"{k}{v}" for k, v in sorted(snapshot.items())))
    if target.is_dir():
        return target
    target.mkdir(parents=True)
    for name in RUNTIME_SDK:
        _link_distribution(name, target)
    for name, version in snapshot.items():
        installed = RUNTIME_PACKAGES / f"{name}-{version}"
        if not installed.is_dir():
            raise AssertionError(f"{installed} missing: run `make setup` (it installs requirements-lambda-runtime.txt)")
        for entry in installed.iterdir():
            if entry.name != "bin":
                (target / entry.name).symlink_to(entry)
    return target


def _opt_python(root: Path, *, traced: bool) -> Path:
    """``/opt/python``: the stack's own layers (staged by OrderLayers) merged in order, AWS's (modelled) last."""
    import shutil

    app = App(outdir=str(root / ("cdk-traced" if traced else "cdk-dev")))
    stack = Stack(app, "ImportPath", env=Environment(account="123456789012", region=REGION))
    layers = OrderLayers(
        stack,
        "Layers",
        props=OrderLayersProps(with_sandbox=not traced, otel_layer_arn=OTEL_LAYER_ARN if traced else None),
    )
    staged = [layers.node.find_child(c).staged_at for c in ("PowertoolsLayer", "AppCodeLayer")]  # type: ignore[attr-defined]
    opt = root / ("opt-traced" if traced else "opt-dev") / "python"
    for layer in staged:
        shutil.copytree(layer / "python", opt, dirs_exist_ok=True)
    if traced:  # AWS's layer last: its files win (linked, not copied: 50 MB)
        if not OTEL_LAYER_PACKAGES.is_dir():
            raise AssertionError(f"{OTEL_LAYER_PACKAGES} missing: run `make setup` (requirements-otel-layer.txt)")
        for entry in OTEL_LAYER_PACKAGES.iterdir():
            if entry.name in ("bin", "__pycache__"):
                continue
            target = opt / entry.name
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            elif target.exists() or target.is_symlink():
                target.unlink()
            target.symlink_to(entry)
    return opt


@pytest.fixture(scope="module")
def modelled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("import-path")
    return {
        "root": root,
        "opt_traced": _opt_python(root, traced=True),
        "opt_dev": _opt_python(root, traced=False),
    }


@pytest.fixture
def moto_server(aws: None) -> Iterator[str]:
    """A moto server sharing this test's moto state, for the handlers in the child interpreter."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def provider_env(tables: Tables) -> Iterator[dict[str, str]]:
    """The prod stack's provider settings: HTTPS URLs (the sandbox on 127.0.0.1) and their secrets."""
    with serve_sandbox(tables.ledger) as endpoints:
        yield _provider_env(endpoints)


def _provider_env(endpoints: ProviderEndpoints) -> dict[str, str]:
    sm = boto3.client("secretsmanager", region_name=REGION)
    secret = json.dumps({"api_key": endpoints.api_key})
    return {
        env_names.PAYMENT_PROVIDER_FUNCTION: "",
        env_names.CARRIER_FUNCTION: "",
        env_names.PAYMENT_API_URL: endpoints.payment_url,
        env_names.PAYMENT_API_SECRET_ARN: sm.create_secret(Name="t/payment", SecretString=secret)["ARN"],
        env_names.CARRIER_API_URL: endpoints.carrier_url,
        env_names.CARRIER_API_SECRET_ARN: sm.create_secret(Name="t/carrier", SecretString=secret)["ARN"],
    }


def _functions(*, sandbox: bool) -> dict[str, str]:
    found = sorted(p.parent.name for p in LAMBDAS.glob("*/handler.py"))
    return {name: str(LAMBDAS / name) for name in found if sandbox or name not in SANDBOX_FUNCTIONS}


def _run(
    path: list[Path], functions: dict[str, str], env: dict[str, str], runs: list[dict[str, Any]], tmp: Path
) -> Any:
    job = {
        "path": [str(p) for p in path],
        "functions": functions,
        "env": env,
        "runs": runs,
        "report_origins": [
            "urllib3",
            "jmespath",
            "boto3",
            "aws_lambda_powertools",
            "order_domain",
            "opentelemetry.trace",
        ],
    }
    job_file = tmp / "job.json"
    job_file.write_text(json.dumps(job))
    child_env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    child_env["PYTHONPATH"] = os.pathsep.join(str(p) for p in path)  # as the wrapper exports it
    out = subprocess.run(
        [sys.executable, "-P", "-S", str(DRIVER), str(job_file)],
        env=child_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [line for line in out.stdout.splitlines() if line.startswith("IMPORT-PATH-RESULT ")]
    assert lines, f"driver failed (exit {out.returncode}):\n{out.stderr[-3000:]}"
    return json.loads(lines[-1].removeprefix("IMPORT-PATH-RESULT "))


def _saga_runs(order: dict[str, Any], saga_input: dict[str, Any]) -> list[dict[str, Any]]:
    """Intake records the order and starts its saga; the forward steps run (two call a provider over HTTP)."""
    return [
        {"function": "intake", "event": {"Records": [make_sqs_record(order, correlation_id="cid-import-path")]}},
        *({"function": step, "event": saga_input} for step in ("reserve_inventory", "charge_payment", "ship_order")),
    ]


def _child_env(
    pipeline_env: dict[str, str], provider_env: dict[str, str], endpoint: str, traced: bool
) -> dict[str, str]:
    queue = pipeline_env[env_names.NEEDS_ATTENTION_QUEUE_URL]
    env = {
        **pipeline_env,
        **provider_env,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        "POWERTOOLS_SERVICE_NAME": "import-path",
        "POWERTOOLS_METRICS_NAMESPACE": "ImportPath",
        env_names.DEAD_LETTER_QUEUE_URL: pipeline_env[env_names.NEEDS_ATTENTION_QUEUE_URL],
        env_names.FAILURES_TABLE_NAME: pipeline_env[env_names.IDEMPOTENCY_TABLE_NAME],
        env_names.REPLAY_TARGETS: json.dumps([{"dlq_url": queue, "source_url": queue}]),
        # read on the first request, not at import (order_domain.wiring.SigningSecrets)
        env_names.WEBHOOK_SECRET_ARN: f"arn:aws:secretsmanager:{REGION}:123456789012:secret:webhook",
    }
    if traced:
        # Tracing on, as in Lambda; the layer's fast-start SDK installed first (what its wrapper runs).
        env.update(
            {"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "false", "OTEL_SDK_DISABLED": "false"}
        )
        env.update(FAST_START)
    return env


Setup = Callable[[], tuple[dict[str, Any], dict[str, Any]]]


@pytest.fixture
def one_order(
    order_factory: Callable[..., dict[str, Any]], saga_input: Callable[..., Any], inventory: Inventory
) -> Setup:
    def _make() -> tuple[dict[str, Any], dict[str, Any]]:
        order = order_factory()
        inventory.seed(**{str(item["sku"]): 100 for item in order["items"]})
        return order, saga_input(order, "cid-import-path")

    return _make


def _assert_ran(result: dict[str, Any]) -> None:
    failed = {name: error for name, error in result["imports"].items() if error != "ok"}
    assert not failed, f"handlers that do not import: {json.dumps(failed, indent=1)}"
    errors = [run for run in result["runs"] if "error" in run]
    assert not errors, f"handlers that fail: {errors}"
    answers = {run["function"]: run["answer"] for run in result["runs"]}
    assert answers["intake"] == {"batchItemFailures": []}
    assert answers["charge_payment"]["status"] == "captured"
    assert answers["ship_order"]["status"] == "shipped"
    assert not result["outside"], f"modules loaded from outside the modelled path: {result['outside'][:20]}"


@pytest.mark.parametrize("snapshot", _snapshots(), ids=lambda s: f"urllib3-{s['urllib3']}")
def test_import_path_traced_handlers_run_on_the_runtime_bundle_first(
    snapshot: dict[str, str],
    modelled: dict[str, Any],
    moto_server: str,
    pipeline_env: dict[str, str],
    provider_env: dict[str, str],
    one_order: Setup,
    tmp_path: Path,
) -> None:
    """The wrapper's path: function dir, runtime bundle, /opt/python (ours, then AWS's layer), stdlib."""
    runtime = _runtime_dir(modelled["root"], snapshot)
    order, state = one_order()
    env = _child_env(pipeline_env, provider_env, moto_server, traced=True)

    result = _run([runtime, modelled["opt_traced"]], _functions(sandbox=False), env, _saga_runs(order, state), tmp_path)

    _assert_ran(result)
    # The runtime's bundle won, as it does in prod: the adapter ran on the runtime's urllib3, not our pin.
    assert result["versions"]["urllib3"] == snapshot["urllib3"]
    assert result["origins"]["urllib3"].startswith(str(runtime))
    assert result["origins"]["jmespath"].startswith(str(runtime))
    assert result["origins"]["order_domain"].startswith(str(modelled["opt_traced"]))
    # The OpenTelemetry API is the layer's (its /opt/python entries are linked to the installed distro).
    assert str(Path(result["origins"]["opentelemetry.trace"]).resolve()).startswith(str(OTEL_LAYER_PACKAGES))
    assert result["spans_started_by_the_layer_sdk"] > 0  # our spans went to the layer's fast-start provider


@pytest.mark.parametrize("snapshot", _snapshots()[:1], ids=lambda s: f"urllib3-{s['urllib3']}")
def test_import_path_dev_without_the_layer_runs_on_our_pins(
    snapshot: dict[str, str],
    modelled: dict[str, Any],
    moto_server: str,
    pipeline_env: dict[str, str],
    provider_env: dict[str, str],
    one_order: Setup,
    tmp_path: Path,
) -> None:
    """Lambda's own path (no wrapper): function dir, /opt/python, then the runtime's bundle: our pins win."""
    runtime = _runtime_dir(modelled["root"], snapshot)
    order, state = one_order()
    env = _child_env(pipeline_env, provider_env, moto_server, traced=False)

    result = _run([modelled["opt_dev"], runtime], _functions(sandbox=True), env, _saga_runs(order, state), tmp_path)

    _assert_ran(result)
    pinned = dict(line.split("==", 1) for line in (LAMBDAS / "requirements.txt").read_text().split() if "==" in line)
    assert result["versions"]["urllib3"] == pinned["urllib3"]
    assert result["origins"]["urllib3"].startswith(str(modelled["opt_dev"]))
    assert result["origins"]["boto3"].startswith(str(runtime))  # the SDK is always the runtime's
