"""Write each state machine's definition from a synthesized template as plain ASL JSON.

The template holds the definition as an ``Fn::Join`` with ``Ref`` and ``Fn::GetAtt`` references;
we resolve them from the template itself to well-formed placeholder values (an ARN, a queue URL or
a name per resource type, no deployment) so ``asl-validator`` can check the document.

Usage: ``python -m tools.export_asl <cdk.out dir> <stack name> <output dir>``; prints the files.

``python -m tools.export_asl --mermaid <cdk.out dir> <stack name> <markdown file>``: the state graph of
the stack's (one) state machine as a Mermaid flowchart, written between the file's
``<!-- state-graph:begin -->`` and ``<!-- state-graph:end -->`` markers (docs/design.md; a test checks
that the checked-in graph is the synthesized one's).
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


GRAPH_BEGIN, GRAPH_END = "<!-- state-graph:begin -->", "<!-- state-graph:end -->"


def _edge_label(errors: list[str]) -> str:
    return "any error" if errors == ["States.ALL"] else ", ".join(errors)


def mermaid(definition: dict[str, Any]) -> str:
    """The definition's states and transitions as a Mermaid flowchart: ``Next`` and ``Default`` solid,
    ``Catch`` dotted and labelled with its errors (a named catch to where the state's ``States.ALL`` goes is drawn
    as that one); Fail and Succeed states rounded. Retries are not drawn."""
    states: dict[str, Any] = definition["States"]
    lines = ["flowchart TD", f"    start((start)) --> {definition['StartAt']}"]
    for name, state in states.items():
        kind = state["Type"]
        if kind in ("Fail", "Succeed"):  # a task is a plain box, named by its ID
            lines.append(f'    {name}(["{name}: {kind.lower()}"])')
    for name, state in states.items():
        for target in (state.get("Next"), state.get("Default")):
            if target:
                lines.append(f"    {name} --> {target}")
        for choice in state.get("Choices", []):
            lines.append(f"    {name} --> {choice['Next']}")
        if state.get("End"):
            lines.append(f"    {name} --> done((end))")
        catches = state.get("Catch", [])
        wildcard = {c["Next"] for c in catches if c["ErrorEquals"] == ["States.ALL"]}
        for catch in catches:  # a named catch going where the catch-all goes is the same route: drawn once
            if catch["ErrorEquals"] != ["States.ALL"] and catch["Next"] in wildcard:
                continue
            lines.append(f'    {name} -.->|"{_edge_label(catch["ErrorEquals"])}"| {catch["Next"]}')
    return "\n".join(lines) + "\n"


def definitions(outdir: Path, stack: str) -> dict[str, dict[str, Any]]:
    """Each state machine's definition in the stack's template, resolved, by logical ID."""
    template = json.loads((outdir / f"{stack}.template.json").read_text())
    resources: dict[str, Any] = template.get("Resources", {})
    return {
        logical_id: json.loads(resolve(body["Properties"]["DefinitionString"], resources))
        for logical_id, body in resources.items()
        if body["Type"] == "AWS::StepFunctions::StateMachine"
    }


def graph_block(document: str) -> str:
    """The Mermaid source between the markers of ``document`` (without the fence)."""
    start, end = document.index(GRAPH_BEGIN), document.index(GRAPH_END)
    block = document[start + len(GRAPH_BEGIN) : end].strip()
    return block.removeprefix("```mermaid").removesuffix("```").lstrip("\n")


def write_graph(outdir: Path, stack: str, markdown: Path) -> None:
    """Replace the graph between ``markdown``'s markers by the stack's state machine's."""
    (definition,) = definitions(outdir, stack).values()
    text = markdown.read_text()
    start, end = text.index(GRAPH_BEGIN) + len(GRAPH_BEGIN), text.index(GRAPH_END)
    markdown.write_text(f"{text[:start]}\n```mermaid\n{mermaid(definition)}```\n{text[end:]}")


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) == 4 and args[0] == "--mermaid":
        write_graph(Path(args[1]), args[2], Path(args[3]))
        raise SystemExit(0)
    if len(args) != 3:
        raise SystemExit(__doc__)
    for p in export(Path(args[0]), args[1], Path(args[2])):
        print(p)
