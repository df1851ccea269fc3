"""``make engines``: both independent engines against the emulator, on the synthesized templates; prints how
many checks agreed, names every disagreement, and fails unless each one is a documented difference
(:data:`DOCUMENTED`, docs/engines.md)."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.engines.asl_emulator import run_paths
from harness.engines.asl_paths import INPUT, STUB_RESULT, Run, compare_runs, enumerate_paths, stub_definition
from harness.engines.iam_checks import (
    Check,
    Kind,
    alarm_checks,
    call_checks,
    compare_verdicts,
    other_roles,
    principal_roles,
    variant_checks,
)
from harness.engines.record import RECORDED
from local_cloud.capture import LineCapture
from local_cloud.clock import SimClock
from local_cloud.deploy import LocalDeployment
from local_cloud.environment import local_aws
from local_cloud.interfaces import Deployment
from local_cloud.template import CloudAssembly
from tools.export_asl import definitions

SCRIPT = Path(__file__).with_name("engines.mjs")
#: Disagreements AWS's documentation settles, by check ID prefix -> which engine it backs (docs/engines.md).
DOCUMENTED: dict[str, str] = {}


@contextmanager
def deployed(outdir: Path, stack: str) -> Iterator[Deployment]:
    clock = SimClock()
    with local_aws(clock):
        yield LocalDeployment(CloudAssembly(outdir, stack), clock, LineCapture()).deploy()


def iam_checks(templates: list[tuple[Path, str]]) -> list[Check]:
    calls = json.loads(RECORDED.read_text())["calls"]
    checks: list[Check] = []
    for outdir, stack in templates:
        with deployed(outdir, stack) as deployment:
            asked_of_others = other_roles(calls, principal_roles(deployment))
            checks += [
                *call_checks(deployment, calls),
                *call_checks(deployment, asked_of_others, Kind.OTHER_ROLE),
                *alarm_checks(deployment),
                *variant_checks(deployment),
            ]
    return checks


@contextmanager
def node_engines(job: dict[str, Any], workdir: Path) -> Iterator[Callable[[], dict[str, Any]]]:
    """Start both engines on ``job`` in one Node process; yields the function that waits for their answers.
    The emulator's side runs meanwhile (two cores: the two processes overlap)."""
    workdir.mkdir(parents=True, exist_ok=True)
    job_file = workdir / "job.json"
    job_file.write_text(json.dumps(job))
    with subprocess.Popen(
        ["node", str(SCRIPT), str(job_file)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:

        def answers() -> dict[str, Any]:
            out, err = process.communicate()
            if process.returncode != 0:
                raise SystemExit(f"engines.mjs failed ({process.returncode}): {err[-2000:]}")
            result: dict[str, Any] = json.loads(out)
            return result

        yield answers


def _documented(check_id: str) -> str | None:
    return next((why for prefix, why in DOCUMENTED.items() if check_id.startswith(prefix)), None)


def main(dev: Path, prod: Path, workdir: Path) -> int:
    started = time.monotonic()
    checks = iam_checks([(dev, "OrderPipeline-dev"), (prod, "OrderPipeline-prod")])
    (definition,) = definitions(dev, "OrderPipeline-dev").values()
    paths = enumerate_paths(definition)
    asl = {
        "definition": stub_definition(definition),
        "input": INPUT,
        "result": STUB_RESULT,
        "startTime": "2026-01-01T00:00:00Z",
        "paths": [{"outcomes": p.outcomes} for p in paths],
    }
    with node_engines({"iam": [{"id": c.id, "simulation": c.simulation} for c in checks], "asl": asl}, workdir) as wait:
        emulated = run_paths(definition, paths, workdir / "stubs")
        answers = wait()
    failures: list[str] = []
    documented: list[str] = []
    agreed = {"call": 0, "other_role": 0, "alarm": 0, "variant": 0, "path": 0}
    for check, answer in zip(checks, answers["iam"], strict=True):
        if compare_verdicts(check.emulator, answer["result"]):
            agreed[check.kind.value] += 1
            continue
        line = f"{check.id}: emulator {check.emulator.value}, iam-simulate {answer['result'] or answer.get('error')}"
        (documented if _documented(check.id) else failures).append(line)
    for path, mine, theirs in zip(paths, emulated, answers["asl"], strict=True):
        diffs = compare_runs(mine, Run(**theirs))
        if diffs:
            failures.append(f"path {path.name}: " + "; ".join(diffs))
        else:
            agreed["path"] += 1
    total = sum(agreed.values())
    denied = sum(1 for c in checks if c.kind is Kind.OTHER_ROLE and c.emulator.value != "allow")
    print(
        f"engines: {total} checks agreed (iam-simulate, dev and prod: {agreed['call']} recorded calls, "
        f"{agreed['other_role']} asked of roles that did not make them ({denied} denied), {agreed['alarm']} alarm "
        f"publish steps, {agreed['variant']} publishes under topic policy guardrails; "
        f"aws-local-stepfunctions: {agreed['path']} of {len(paths)} saga paths), "
        f"{len(documented)} documented differences, {len(failures)} disagreements "
        f"in {time.monotonic() - started:.1f} s"
    )
    for line in documented:
        print(f"  documented: {line}")
    for line in failures:
        print(f"  DISAGREE: {line}")
    return 1 if failures else 0
