"""Read a synthesized cloud assembly: the template, its assets, and CloudFormation intrinsics."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ACCOUNT = "123456789012"
REGION = "us-east-1"


@dataclass(frozen=True)
class Resource:
    logical_id: str
    type: str
    properties: dict[str, Any]
    metadata: dict[str, Any]


class CloudAssembly:
    """One stack's template inside a ``cdk.out`` directory."""

    def __init__(self, outdir: Path, stack_name: str) -> None:
        self.outdir = Path(outdir)
        self.stack_name = stack_name
        path = self.outdir / f"{stack_name}.template.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found: synthesize the app first")
        self.template: dict[str, Any] = json.loads(path.read_text())

    def resources(self, type_: str | None = None) -> Iterator[Resource]:
        for logical_id, body in self.template.get("Resources", {}).items():
            if type_ is None or body["Type"] == type_:
                yield Resource(logical_id, body["Type"], body.get("Properties", {}), body.get("Metadata", {}))

    def resource(self, logical_id: str) -> Resource:
        body = self.template["Resources"][logical_id]
        return Resource(logical_id, body["Type"], body.get("Properties", {}), body.get("Metadata", {}))

    def asset_dir(self, resource: Resource) -> Path:
        """The directory an asset-backed resource (function, layer) was staged to."""
        asset = resource.metadata.get("aws:asset:path")
        if not asset:
            raise ValueError(f"{resource.logical_id} has no aws:asset:path metadata")
        return self.outdir / asset


class Resolver:
    """Resolves Ref / Fn::GetAtt / Fn::Join / Fn::Select / Fn::Split / Fn::Sub against known values.

    Why hand-written: we run the template's own wiring locally; moto's CloudFormation would
    try to run the functions in Docker and does not know our in-process runtime.
    """

    def __init__(self, stack_name: str, refs: dict[str, str], attrs: dict[tuple[str, str], str]) -> None:
        self.pseudo = {
            "AWS::Region": REGION,
            "AWS::AccountId": ACCOUNT,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": stack_name,
            "AWS::NoValue": None,
        }
        self.refs = refs
        self.attrs = attrs

    def __call__(self, value: Any) -> Any:
        return self.resolve(value)

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            key, arg = next(iter(value.items()))
            handler = self._intrinsics().get(key)
            if handler is not None:
                return handler(arg)
        return {k: self.resolve(v) for k, v in value.items()}

    def _intrinsics(self) -> dict[str, Callable[[Any], Any]]:
        return {
            "Ref": self._ref,
            "Fn::GetAtt": self._get_att,
            "Fn::Join": lambda a: str(a[0]).join(str(self.resolve(p)) for p in self.resolve(a[1])),
            "Fn::Select": lambda a: self.resolve(a[1])[int(self.resolve(a[0]))],
            "Fn::Split": lambda a: str(self.resolve(a[1])).split(a[0]),
            "Fn::Sub": self._sub,
        }

    def _ref(self, name: str) -> Any:
        if name in self.pseudo:
            return self.pseudo[name]
        if name not in self.refs:
            raise KeyError(f"Ref to {name} which the local deployment does not know")
        return self.refs[name]

    def _get_att(self, arg: list[str] | str) -> str:
        logical_id, attr = arg if isinstance(arg, list) else arg.split(".", 1)
        key = (logical_id, attr)
        if key not in self.attrs:
            raise KeyError(f"Fn::GetAtt {logical_id}.{attr} unknown to the local deployment")
        return self.attrs[key]

    def _sub(self, arg: str | list[Any]) -> str:
        text, variables = (arg, {}) if isinstance(arg, str) else (arg[0], self.resolve(arg[1]))
        out = str(text)
        for name, val in variables.items():
            out = out.replace("${" + name + "}", str(val))
        for name, val in self.pseudo.items():
            out = out.replace("${" + name + "}", str(val))
        for name, val in self.refs.items():
            out = out.replace("${" + name + "}", str(val))
        return out
