"""Every patch the emulator applies to moto, Powertools, botocore or the standard library.

One entry per patched attribute: what it patches, why (``kind``), where it is applied and the
canary test that fails when an upgrade moves it (in the package's tests:
``tests/test_patch_canaries.py``, which also fails when the emulator patches an attribute
not listed here). A patch is kept only where it buys correctness, an emulation AWS does itself
(no Docker, IAM, limits, simulated time), fault injection, or a measured speed-up. A caller that
patches third-party code of its own (fault injection of its scenarios) keeps its own registry of
:class:`Patch` entries and renders the table of both with :func:`markdown_rows`.

Speed patches can be switched off to measure them again, e.g.
``OPS_LOCAL_DISABLE_PATCHES=asl_parse_cache,json_path_cache`` in the environment, a whole change by its name
(``moto_stepfunctions_speed``), or all of them at once with ``OPS_LOCAL_DISABLE_PATCHES=speed`` (unset: every
patch on).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from local_cloud.function_env import process_storage
from local_cloud.patch_types import Kind, Patch
from local_cloud.patches_fidelity import FIDELITY_REGISTRY
from local_cloud.patches_speed import SPEED_REGISTRY

__all__ = [
    "ALL_SPEED",
    "DISABLE_ENV",
    "PATCHES",
    "Kind",
    "Patch",
    "by_name",
    "enabled",
    "markdown_rows",
    "no_patch_outlives",
    "outlived",
    "patched_now",
    "resolve",
    "targets",
]

PATCHES: tuple[Patch, ...] = FIDELITY_REGISTRY + SPEED_REGISTRY

#: Environment variable naming speed patches to leave off (comma-separated ``Patch.name``; ``speed``: all of them).
DISABLE_ENV = "OPS_LOCAL_DISABLE_PATCHES"
#: The value of :data:`DISABLE_ENV` (alone or in the list) that leaves every speed patch off.
ALL_SPEED = "speed"


def by_name(name: str) -> Patch:
    for patch in PATCHES:
        if patch.name == name:
            return patch
    raise KeyError(f"no patch named {name!r} in local_cloud.patches.PATCHES")


def enabled(name: str) -> bool:
    """Whether the speed patch ``name`` applies (only speed patches can be switched off: by name, by the name of
    the change it is part of, or all of them with ``speed``)."""
    patch = by_name(name)
    disabled = {n.strip() for n in os.environ.get(DISABLE_ENV, "").split(",") if n.strip()}
    return patch.kind != "speed" or not ({patch.name, patch.change, ALL_SPEED} & disabled)


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


def patched_now() -> dict[str, Any]:
    """Every registered target's own attribute now (``module:attribute`` -> object), read without binding:
    compared before and after a test, it shows a patch that outlived the test (tests' ``conftest.py``). The
    invocations' ``os.environ`` overlay reads as the storage beneath it: it is installed while any invocation
    runs, and a served endpoint's background invocations may run across a test's boundary."""
    now: dict[str, Any] = {}
    for patch in PATCHES:
        for module, attribute in targets(patch):
            owner_path, _, name = attribute.rpartition(".")
            owner = resolve(module, owner_path) if owner_path else importlib.import_module(module)
            now[f"{module}:{attribute}"] = process_storage(vars(owner).get(name))
    return now


def outlived(before: dict[str, Any]) -> list[str]:
    """The targets whose attribute is no longer what :func:`patched_now` read in ``before``."""
    return [target for target, obj in patched_now().items() if before.get(target) is not obj]


@contextmanager
def no_patch_outlives(what: str = "the block") -> Iterator[None]:
    """Raise if a registered target is not, after the block, what it was before it (a patch restored out of
    order leaves a hook in place for whatever runs next: the tests' autouse fixtures wrap each test in this)."""
    before = patched_now()
    yield
    if left := outlived(before):
        raise AssertionError(f"patches outlived {what}: {left}")
