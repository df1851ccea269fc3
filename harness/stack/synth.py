"""Synthesize the CDK app for the local run (stage dev, providers pointed at the local sandbox)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from pathlib import Path
from typing import Any
from unittest import mock

from harness.stack.options import RunOptions
from local_cloud.environment import FAKE_ENV
from local_cloud.template import REGION, CloudAssembly
from ops.errors import OpsError

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUTDIR = REPO_ROOT / ".build" / "local.out"

#: The local run deploys stage dev with the HTTPS provider adapters (prod's code path), pointed at
#: the sandbox served over HTTP on 127.0.0.1 (lambdas/sandbox/http_server.py). The template carries
#: this placeholder origin; the deployment replaces it with the server's ephemeral port before
#: any function starts. The secrets are created in moto under these names (partial ARNs).
LOCAL_PROVIDER_ORIGIN = "http://127.0.0.1:9"
LOCAL_SECRETS = {"payment": "local/payment-api", "carrier": "local/carrier-api"}
LOCAL_PROVIDER_CONTEXT = {
    "payment_api_url": f"{LOCAL_PROVIDER_ORIGIN}/payment",
    "payment_api_secret_arn": f"arn:aws:secretsmanager:{REGION}:123456789012:secret:{LOCAL_SECRETS['payment']}",
    "carrier_api_url": f"{LOCAL_PROVIDER_ORIGIN}/carrier",
    "carrier_api_secret_arn": f"arn:aws:secretsmanager:{REGION}:123456789012:secret:{LOCAL_SECRETS['carrier']}",
}


def synthesize(outdir: Path, stage: str, extra_context: dict[str, Any] | None = None) -> CloudAssembly:
    """Synthesize the CDK app (checks and cdk-nag included) into ``outdir``, with ``extra_context``."""
    from stacks.app_builder import STACK_NAME, build_app

    outdir.mkdir(parents=True, exist_ok=True)
    context = json.loads((REPO_ROOT / "cdk.json").read_text()).get("context", {})
    # The CLI sets asset metadata; without it the template carries no asset paths.
    context.update({"stage": stage, "aws:cdk:enable-asset-metadata": True})
    if stage != "dev":
        raise OpsError("the local run deploys stage dev (prod's providers are real APIs: see README)")
    context.update(LOCAL_PROVIDER_CONTEXT)
    context.update(extra_context or {})
    cloud_assembly = build_app(context=context, outdir=str(outdir)).synth()
    errors = [
        f"{message.id}: {message.entry.data}"
        for stack in cloud_assembly.stacks
        for message in stack.messages
        if str(message.level.value).lower() == "error"
    ]
    if errors:  # what `cdk synth` refuses, we refuse too (ResilienceChecks findings)
        raise RuntimeError("synth reported errors:\n" + "\n".join(errors))
    return CloudAssembly(outdir, f"{STACK_NAME}-{stage}")


def synthesize_once(root: Path, stage: str) -> CloudAssembly:
    """The local run's assembly for ``stage`` under ``root``, synthesized by the first caller only.

    Callers sharing ``root`` (the pytest-xdist workers of one test run) wait for that synth under a file lock
    and read what it wrote; a synth that did not finish (no completion mark) is done again."""
    outdir, done = root / f"local-{stage}", root / f"local-{stage}.done"
    root.mkdir(parents=True, exist_ok=True)
    with (root / f"local-{stage}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(outdir, ignore_errors=True)
            synthesize(outdir, stage)
            done.touch()
    return CloudAssembly(outdir, f"OrderPipeline-{stage}")


def xdist_run_root(basetemp: Path) -> Path:
    """Where one pytest run's workers share assemblies: under pytest-xdist the parent of a worker's
    ``basetemp`` is the run's (every worker's ``basetemp`` is a child of it); else ``basetemp`` itself."""
    return (basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp) / "assemblies"


def load_assembly(options: RunOptions) -> CloudAssembly:
    """``options.assembly_dir`` when given, else a fresh synth into :data:`DEFAULT_OUTDIR`."""
    with mock.patch.dict(os.environ, FAKE_ENV):
        if options.assembly_dir:
            return CloudAssembly(options.assembly_dir, f"OrderPipeline-{options.stage}")
        return synthesize(DEFAULT_OUTDIR, options.stage)
