"""Every patch the emulator applies to moto, Powertools, botocore or the standard library.

One entry per patched attribute: what it patches, why (``kind``), where it is applied and the
canary test that fails when an upgrade moves it (in the package's tests:
``tests/test_patch_canaries.py``, which also fails when the emulator patches an attribute
not listed here). A patch is kept only where it buys correctness, an emulation AWS does itself
(no Docker, IAM, limits, simulated time), fault injection, or a measured speed-up. A caller that
patches third-party code of its own (fault injection of its scenarios) keeps its own registry of
:class:`Patch` entries and renders the table of both with :func:`markdown_rows`.

Speed patches can be switched off to measure them again, e.g.
``OPS_LOCAL_DISABLE_PATCHES=asl_parse_cache,url_dispatch_cache`` in the environment.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from local_cloud.patch_types import Kind, Patch
from local_cloud.patches_fidelity import FIDELITY_REGISTRY
from local_cloud.patches_speed import SPEED_REGISTRY

__all__ = ["DISABLE_ENV", "PATCHES", "Kind", "Patch", "by_name", "enabled", "markdown_rows", "resolve", "targets"]

PATCHES: tuple[Patch, ...] = FIDELITY_REGISTRY + SPEED_REGISTRY

#: Environment variable naming speed patches to leave off (comma-separated ``Patch.name``).
DISABLE_ENV = "OPS_LOCAL_DISABLE_PATCHES"


def by_name(name: str) -> Patch:
    for patch in PATCHES:
        if patch.name == name:
            return patch
    raise KeyError(f"no patch named {name!r} in local_cloud.patches.PATCHES")


def enabled(name: str) -> bool:
    """Whether the speed patch ``name`` applies (only speed patches can be switched off)."""
    patch = by_name(name)
    disabled = {n.strip() for n in os.environ.get(DISABLE_ENV, "").split(",") if n.strip()}
    return patch.kind != "speed" or patch.name not in disabled


def targets(patch: Patch) -> list[tuple[str, str]]:
    """``(module, dotted attribute)`` pairs a patch names (``{a,b}`` expands)."""
    out: list[tuple[str, str]] = []
    for part in patch.target.split(" + "):
        module, _, attr = part.partition(":")
        if "{" in module:
            head, _, rest = module.partition("{")
            names, _, tail = rest.partition("}")
            mods = [f"{head}{n}{tail}" for n in names.split(",")]
        else:
            mods = [module]
        if not attr and "." in part:  # "DynamoDBBackend.transact_write_items" after " + "
            module, attr = patch.target.split(":", 1)[0], part
            mods = [module]
        head, _, rest = attr.partition("{")
        attrs = [f"{head}{n}{rest.partition('}')[2]}" for n in rest.partition("}")[0].split(",")] if rest else [attr]
        out.extend((m, a) for m in mods for a in attrs)
    return out


def resolve(module: str, attribute: str) -> Any:
    """The object at ``module:attribute`` now (raises if an upgrade moved it)."""
    obj: Any = importlib.import_module(module)
    for part in attribute.split("."):
        obj = getattr(obj, part)
    return obj


def markdown_rows(patches: tuple[Patch, ...] = PATCHES) -> str:
    """The documentation table's rows, one per patch (the canary test checks the docs hold them)."""
    rows = []
    for p in patches:
        why = p.why + (f" Measured: {p.measured}" if p.measured else "")
        rows.append(f"| `{p.name}` | `{p.target}` | {p.kind} | {why} | `{p.canary}` |")
    return "\n".join(rows)
