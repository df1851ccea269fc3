"""Write each state machine's definition from a synthesized template as plain ASL JSON.

The template holds the definition as an ``Fn::Join`` with ``Ref`` and ``Fn::GetAtt`` references;
we resolve them from the template itself to well-formed placeholder values (an ARN, a queue URL or
a name per resource type, no deployment) so ``asl-validator`` can check the document.

Usage: ``python -m tools.export_asl <cdk.out dir> <stack name> <output dir>``; prints the files.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

#: Placeholder account and region of the resolved ARNs.
ACCOUNT, REGION = "123456789012", "us-east-1"
PSEUDO = {"AWS::Partition": "aws", "AWS::Region": REGION, "AWS::AccountId": ACCOUNT, "AWS::URLSuffix": "amazonaws.com"}
#: Resource type -> (Ref value, Arn) templates; ``{id}`` is the logical ID. Other types: an ARN for both.
SHAPES = {
    "AWS::Lambda::Function": ("{id}", f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{{id}}"),
    "AWS::DynamoDB::Table": ("{id}", f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{{id}}"),
    "AWS::SQS::Queue": (
        f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{{id}}",
        f"arn:aws:sqs:{REGION}:{ACCOUNT}:{{id}}",
    ),
}


def placeholder(resources: dict[str, Any], logical_id: str, attribute: str | None) -> str:
    """The placeholder value of ``Ref`` (``attribute`` None) or ``Fn::GetAtt`` of a template resource."""
    type_ = resources[logical_id]["Type"]
    service = type_.split("::")[1].lower()
    ref, arn = SHAPES.get(type_, (f"arn:aws:{service}:{REGION}:{ACCOUNT}:{{id}}",) * 2)
    return (ref if attribute is None else arn).format(id=logical_id)


def resolve(value: Any, resources: dict[str, Any]) -> Any:
    """``value`` with ``Fn::Join``, ``Ref`` and ``Fn::GetAtt`` replaced by strings."""
    if isinstance(value, list):
        return [resolve(v, resources) for v in value]
    if not isinstance(value, dict):
        return value
    if "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(str(resolve(p, resources)) for p in parts)
    if "Ref" in value:
        name = value["Ref"]
        return PSEUDO[name] if name in PSEUDO else placeholder(resources, name, None)
    if "Fn::GetAtt" in value:
        logical_id, attribute = value["Fn::GetAtt"]
        return placeholder(resources, logical_id, attribute)
    return {k: resolve(v, resources) for k, v in value.items()}


def export(outdir: Path, stack: str, target: Path) -> list[Path]:
    template = json.loads((outdir / f"{stack}.template.json").read_text())
    resources: dict[str, Any] = template.get("Resources", {})
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for logical_id, body in resources.items():
        if body["Type"] != "AWS::StepFunctions::StateMachine":
            continue
        definition = json.loads(resolve(body["Properties"]["DefinitionString"], resources))
        path = target / f"{logical_id}.asl.json"
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
