"""Write each state machine's definition from a synthesized template as plain ASL JSON.

The template holds the definition as an ``Fn::Join`` with ``Fn::GetAtt`` references; we resolve
them to well-formed placeholder ARNs (the same naming the local run uses) so ``asl-validator``
can check the document.

Usage: ``python -m tools.export_asl <cdk.out dir> <stack name> <output dir>``; prints the files.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from local_cloud.clock import SimClock
from local_cloud.deploy import LocalDeployment
from local_cloud.template import CloudAssembly


def export(outdir: Path, stack: str, target: Path) -> list[Path]:
    assembly = CloudAssembly(outdir, stack)
    plan = LocalDeployment(assembly, SimClock())  # naming and reference resolution only, no AWS calls
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for resource in assembly.resources("AWS::StepFunctions::StateMachine"):
        definition = json.loads(plan.resolve(resource.properties["DefinitionString"]))
        path = target / f"{resource.logical_id}.asl.json"
        path.write_text(json.dumps(definition, indent=2))
        written.append(path)
    if not written:
        raise SystemExit(f"no state machine in {stack}")
    return written


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    for p in export(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])):
        print(p)
