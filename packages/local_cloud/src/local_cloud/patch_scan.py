"""The source scan behind a patch registry's canary tests: each ``mock.patch.object`` call (an owner, then
the attribute's name as a string literal) written in a tree of sources is either registered (the registry
names the attribute, so a canary watches it) or patches one of the tree's own targets. The emulator's
registry (:mod:`local_cloud.patches`) and an application's registry on top of it (this repository's
the caller's own patches) are both checked with it.

Why a regular expression over the text, not an import: the scan must see every patch written, including
those in code paths no test runs; the call form is the repository's one way of patching (no string targets).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from pathlib import Path

#: A ``mock.patch.object`` call's owner (a name or a dotted name) and attribute, across line breaks.
PATCH_CALL = re.compile(r'mock\.patch\.object\(\s*([\w.]+),\s*"(\w+)"')


def unregistered_patches(
    sources: Iterable[Path], registered: Iterable[tuple[str, str]], own_targets: Collection[str]
) -> list[str]:
    """``"<file>: <owner>.<attribute>"`` for each patch in the ``*.py`` files under ``sources`` (folders,
    subfolders included) whose attribute no ``(module, "Owner.attribute")`` of ``registered`` names and
    whose owner is not one of ``own_targets``; files in path order, relative to their source folder."""
    names = {attribute.rsplit(".", 1)[-1] for _, attribute in registered}
    unregistered = []
    for root in sources:
        for source in sorted(root.rglob("*.py")):
            for owner, attribute in PATCH_CALL.findall(source.read_text()):
                if owner not in own_targets and attribute not in names:
                    unregistered.append(f"{source.relative_to(root).as_posix()}: {owner}.{attribute}")
    return unregistered
