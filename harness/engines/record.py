"""Record the calls a local run makes, for the IAM simulator: ``python -m harness.engines record``.

One order of every kind (harness.workload.orders.KINDS) through the dev template's local pipeline; each principal's
distinct (action, resource) checks, allowed or denied, its platform uses included, with its role's logical ID
and the stack's name as a token (so the prod template's roles can be asked too). Re-record when the handlers'
calls change; the file is harness/engines/recorded_calls.json.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from harness.engines.iam_checks import tokenise
from harness.stack.options import RunOptions
from harness.stack.pipeline import local_pipeline
from harness.workload.orders import KINDS, make_order
from local_cloud.iam_enforce import IamEnforcer
from local_cloud.template import CloudAssembly

RECORDED = Path(__file__).with_name("recorded_calls.json")


def record(outdir: Path, stack: str = "OrderPipeline-dev") -> dict[str, Any]:
    assembly = CloudAssembly(outdir, stack)
    calls: set[tuple[str, str, str]] = set()
    with local_pipeline(RunOptions(assembly_dir=assembly.outdir), assembly) as run:
        run.submit([(make_order(f"engines-{k}", random.Random(k), k), f"cid-engines-{k}") for k in KINDS])
        run.drain()
        enforcer = run.deployment.iam
        if not isinstance(enforcer, IamEnforcer):
            raise RuntimeError("the local pipeline runs with IAM enforced")
        for principal in enforcer.principals.values():
            for action, resource in [*principal.used, *principal.denied]:
                calls.add((str(principal.role_id), action, tokenise(resource, stack)))
    rows = [{"role": r, "action": a, "resource": res} for r, a, res in sorted(calls)]
    return {"recorded_from": stack, "orders": list(KINDS), "calls": rows}


def main(outdir: Path) -> None:
    RECORDED.write_text(json.dumps(record(outdir), indent=1) + "\n")
