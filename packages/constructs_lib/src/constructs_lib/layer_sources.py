"""What a packages layer holds: the distributions it is asked for and, transitively, what they require, and
each one's files (an editable install's too), without the test helpers a distribution ships for its users.

Requirements are read from the installed distributions' metadata (``importlib.metadata``) and parsed with
``packaging`` (PEP 508: extras, environment markers evaluated for the synth interpreter, which runs the
functions' Python version: ``tests/infra/test_runtime_parity.py``).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

#: The AWS SDK for Python the Lambda Python runtimes include
#: (https://docs.aws.amazon.com/lambda/latest/dg/lambda-python.html): not staged when another distribution
#: requires it (nor what only it requires). Name one in ``distributions`` to stage it anyway.
RUNTIME_PROVIDED = ("boto3", "botocore", "s3transfer")
#: Test helpers a distribution ships for its users' tests (paths inside ``python/``): never deployed, left out
#: of every layer where present.
TEST_HELPERS = ("lambda_resilience/testing.py",)


def installed(name: str) -> metadata.Distribution:
    try:
        return metadata.distribution(name)
    except metadata.PackageNotFoundError as exc:
        raise ValueError(
            f"distribution {name!r} is not installed in the environment that runs the synth; install it there "
            "(the layer copies the installed files)"
        ) from exc


def resolve(names: Sequence[str], provided: Sequence[str] = RUNTIME_PROVIDED) -> dict[str, metadata.Distribution]:
    """``{name: distribution}``: each of ``names`` (a requirement, e.g. ``lambda-resilience[tracing]``; keyed by
    its name as given) first, then what they require, transitively (keyed by the distribution's own name),
    with the extras asked for; a distribution of ``provided`` only when named."""
    skip = {canonicalize_name(p) for p in provided}
    found: dict[str, tuple[str, metadata.Distribution]] = {}
    done: set[tuple[str, str]] = set()  # (distribution, extra) whose requirements were queued
    queue = [(Requirement(n), True) for n in names]
    while queue:
        requirement, named = queue.pop(0)
        key = canonicalize_name(requirement.name)
        if not named and key in skip:
            continue
        if key not in found:
            dist = installed(requirement.name)
            found[key] = (requirement.name if named else dist.metadata["Name"], dist)
        dist = found[key][1]
        for extra in ("", *sorted(requirement.extras)):
            if (key, extra) in done:
                continue
            done.add((key, extra))
            for text in dist.requires or ():
                needed = Requirement(text)
                if needed.marker is None or needed.marker.evaluate({"extra": extra}):
                    queue.append((needed, False))
    return {name: dist for name, dist in found.values()}


def _editable_packages(dist: metadata.Distribution) -> list[Path] | None:
    """The top-level package directories of an editable install (its files are a ``.pth`` file), else None."""
    direct = dist.read_text("direct_url.json")
    if not direct or not json.loads(direct).get("dir_info", {}).get("editable"):
        return None
    tops = (dist.read_text("top_level.txt") or "").split() or [dist.metadata["Name"].replace("-", "_")]
    packages = []
    for top in tops:
        spec = importlib.util.find_spec(top)
        if spec is None or not spec.submodule_search_locations:
            raise ValueError(f"{dist.metadata['Name']} is installed editable but its package {top!r} is not importable")
        packages.append(Path(next(iter(spec.submodule_search_locations))))
    return packages


def distribution_files(dist: metadata.Distribution) -> list[tuple[Path, Path]]:
    """``(source, path inside python/)`` of a distribution's files as recorded by pip, or, for an editable
    install, of its packages' source trees; absolute and parent-relative records (console scripts) skipped."""
    packages = _editable_packages(dist)
    if packages is not None:
        return [(src, src.relative_to(p.parent)) for p in packages for src in sorted(p.rglob("*")) if src.is_file()]
    files = []
    for rel in dist.files or ():
        rel_path = Path(str(rel))
        if not rel_path.is_absolute() and ".." not in rel_path.parts:
            files.append((Path(str(dist.locate_file(rel))), rel_path))
    return files
