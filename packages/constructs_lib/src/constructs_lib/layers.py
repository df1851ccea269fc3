"""Lambda layers assembled at synth time without Docker.

Why hand-written: CDK's Python bundling (``aws-lambda-python-alpha``) needs Docker, which is absent
on our CI and dev machines. Our layer contents are pure Python, so we stage them by copying:

- :class:`PythonPackagesLayer` copies *installed distributions* (e.g. ``aws-lambda-powertools``)
  from the environment that runs the synth. The deployed version is therefore exactly the version
  the tests ran against (pinned in ``lambdas/requirements.txt``).
- :class:`SourceTreeLayer` copies local source packages (e.g. ``lambdas/order_domain``).

Staging happens under the *app's* build folder, never next to this library (which may sit in a
read-only site-packages): ``staging_dir`` when given, else ``<app outdir>/.layer-staging`` (the
outdir of the CDK ``App`` the construct belongs to: ``cdk.out`` under the CLI, the ``outdir`` a
test passes). Staging directories are content-addressed (``<staging>/<id>-<sha256 prefix>``) and
written atomically, so parallel synths (pytest-xdist, CI) never see a half-written layer; CDK then
copies them into the cloud assembly as assets, hashed by content, so the template does not depend
on where they were staged.

Only pure-Python distributions are accepted: a compiled extension would be built for the synth
machine, not for Lambda, so it is rejected at synth time. The layers therefore declare both
architectures (arm64 and x86_64) by default.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from aws_cdk import App
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from constructs_lib.layer_sources import RUNTIME_PROVIDED, TEST_HELPERS, distribution_files, resolve

_IGNORED_SUFFIXES = (".pyc", ".pyo")
_IGNORED_PARTS = ("__pycache__",)
_COMPILED_SUFFIXES = (".so", ".pyd", ".dylib")
#: Folder under the app's outdir that layer contents are staged in when no ``staging_dir`` is given.
STAGING_FOLDER = ".layer-staging"
#: Pure-Python content runs on either instruction set.
ALL_ARCHITECTURES = (lambda_.Architecture.ARM_64, lambda_.Architecture.X86_64)


def staging_root(scope: Construct, staging_dir: Path | None = None) -> Path:
    """Where ``scope``'s layers are staged: ``staging_dir``, else ``<app outdir>/.layer-staging``.

    Resolved from the CDK app that ``scope`` belongs to (its outdir), never from the working
    directory or from this library's location.
    """
    if staging_dir is not None:
        return Path(staging_dir).resolve()
    root = scope.node.root
    if not isinstance(root, App):
        raise ValueError(
            f"{scope.node.path}: not inside a CDK App, so there is no app outdir to stage layer files "
            "under; pass staging_dir"
        )
    return Path(root.outdir).resolve() / STAGING_FOLDER


def _wanted(path: Path) -> bool:
    return path.suffix not in _IGNORED_SUFFIXES and not any(p in _IGNORED_PARTS for p in path.parts)


def _without(files: list[tuple[Path, Path]], exclude: Sequence[str]) -> list[tuple[Path, Path]]:
    """``files`` minus those whose path inside ``python/`` matches a pattern of ``exclude``."""
    unmatched = [pattern for pattern in exclude if not any(rel.match(pattern) for _, rel in files)]
    if unmatched:
        raise ValueError(f"exclude patterns match no file of the layer: {', '.join(unmatched)}")
    return [(src, rel) for src, rel in files if not any(rel.match(pattern) for pattern in exclude)]


def _stage(root: Path, name: str, files: Iterable[tuple[Path, Path]]) -> tuple[Path, str]:
    """Copy ``(source, path inside python/)`` pairs into a content-addressed layer directory under ``root``."""
    pairs = sorted(files, key=lambda pair: str(pair[1]))
    digest = hashlib.sha256()
    for src, rel in pairs:
        digest.update(str(rel).encode())
        digest.update(src.read_bytes())
    hexdigest = digest.hexdigest()
    target = root / f"{name}-{hexdigest[:16]}"
    if target.is_dir():
        return target, hexdigest
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    for src, rel in pairs:
        dest = tmp / "python" / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
    try:
        os.rename(tmp, target)
    except OSError:  # another synth staged the same content first
        shutil.rmtree(tmp, ignore_errors=True)
    return target, hexdigest


def _pure_python(name: str, dist: metadata.Distribution, fallback: Sequence[str]) -> list[tuple[Path, Path]]:
    """A distribution's layer files: caches and dist-info-less records left out; a compiled file refused
    (or, for a ``fallback`` distribution, left out)."""
    files = []
    for src, rel_path in distribution_files(dist):
        if not _wanted(rel_path) or rel_path.suffix == ".pth":
            continue  # caches; an editable install's path file
        if rel_path.suffix in _COMPILED_SUFFIXES and name in fallback:
            continue  # the distribution runs without it (its pure-Python implementation)
        if rel_path.suffix in _COMPILED_SUFFIXES:
            raise ValueError(f"{name} ships a compiled extension ({rel_path}); it cannot be staged without Docker")
        files.append((src, rel_path))
    return files


@dataclass(frozen=True)
class PythonPackagesLayerProps:
    """Props for :class:`PythonPackagesLayer`.

    Attributes:
        distributions: installed distributions to copy (their files as recorded by pip; an editable
            install's package sources), as requirements (``name`` or ``name[extra,...]``): what they
            require is copied too, transitively (the extras asked for, environment markers evaluated),
            and test helpers they ship (:data:`constructs_lib.layer_sources.TEST_HELPERS`) are left out.
        provided_by_runtime: distributions the Lambda runtime provides, not copied when only required
            by another; default the AWS SDK for Python (boto3, botocore, s3transfer).
        compatible_runtimes: runtimes the layer declares; default: none declared.
        compatible_architectures: architectures the layer declares; default arm64 and x86_64
            (the content is pure Python: compiled files are rejected or, with
            ``pure_python_fallback``, left out).
        description: layer description; default names the distributions and versions.
        pure_python_fallback: distributions (among ``distributions``) whose compiled extension is
            optional because they fall back to pure Python without it (e.g. ``wrapt``): their
            compiled files are left out instead of failing synth. Default: none.
        staging_dir: folder to stage the layer's files in; default ``<app outdir>/.layer-staging``.
    """

    distributions: Sequence[str]
    provided_by_runtime: Sequence[str] = RUNTIME_PROVIDED
    compatible_runtimes: Sequence[lambda_.Runtime] = field(default_factory=tuple)
    compatible_architectures: Sequence[lambda_.Architecture] = ALL_ARCHITECTURES
    description: str | None = None
    pure_python_fallback: Sequence[str] = field(default_factory=tuple)
    staging_dir: Path | None = None

    def __post_init__(self) -> None:
        unknown = set(self.pure_python_fallback) - set(self.distributions)
        if unknown:
            raise ValueError(f"pure_python_fallback names distributions not in distributions: {sorted(unknown)}")
        if not self.compatible_architectures:
            raise ValueError("compatible_architectures must name at least one architecture")


class PythonPackagesLayer(Construct):
    """A layer holding copies of installed pure-Python distributions.

    Attributes:
        layer: the ``LayerVersion``.
        versions: ``{distribution: version}`` that were staged.
        staged_at: the staging directory (``<staging root>/<id>-<sha256 prefix>``).
    """

    def __init__(self, scope: Construct, construct_id: str, *, props: PythonPackagesLayerProps) -> None:
        super().__init__(scope, construct_id)
        if not props.distributions:
            raise ValueError("PythonPackagesLayer needs at least one distribution")
        self.versions: dict[str, str] = {}
        files: list[tuple[Path, Path]] = []
        for name, dist in resolve(props.distributions, props.provided_by_runtime).items():
            self.versions[name] = dist.version
            files.extend(_pure_python(name, dist, props.pure_python_fallback))
        files = [(src, rel) for src, rel in files if not any(rel.match(helper) for helper in TEST_HELPERS)]
        target, _ = _stage(staging_root(self, props.staging_dir), construct_id, files)
        self.staged_at = target
        description = props.description or ", ".join(f"{k}=={v}" for k, v in sorted(self.versions.items()))
        self.layer = lambda_.LayerVersion(
            self,
            "Layer",
            code=lambda_.Code.from_asset(str(target)),
            compatible_runtimes=list(props.compatible_runtimes) or None,
            compatible_architectures=list(props.compatible_architectures),
            description=description[:256],
        )


@dataclass(frozen=True)
class SourceTreeLayerProps:
    """Props for :class:`SourceTreeLayer`.

    Attributes:
        packages: source package directories; each is copied as ``python/<dirname>``.
        description: layer description; default ``project source packages``.
        compatible_architectures: default arm64 and x86_64 (source files are pure Python).
        staging_dir: folder to stage the layer's files in; default ``<app outdir>/.layer-staging``.
        exclude: glob patterns of files left out, matched against the path inside ``python/``
            (e.g. ``mylib/testing.py``: test helpers a package ships for its users' tests, which no
            deployed function needs); default none. A pattern that matches no file is refused (a typo
            would silently ship what it meant to leave out). The test helpers of
            :data:`constructs_lib.layer_sources.TEST_HELPERS` are left out without being named.
    """

    packages: Sequence[Path]
    description: str = "project source packages"
    compatible_architectures: Sequence[lambda_.Architecture] = ALL_ARCHITECTURES
    staging_dir: Path | None = None
    exclude: Sequence[str] = ()

    def __post_init__(self) -> None:
        if not self.packages:
            raise ValueError("SourceTreeLayer needs at least one package")
        if not self.compatible_architectures:
            raise ValueError("compatible_architectures must name at least one architecture")


class SourceTreeLayer(Construct):
    """A layer holding copies of local source packages (without caches).

    Attributes:
        layer: the ``LayerVersion``.
        digest: sha256 over the staged files (changes exactly when the code changes).
        staged_at: the staging directory (``<staging root>/<id>-<sha256 prefix>``).
    """

    def __init__(self, scope: Construct, construct_id: str, *, props: SourceTreeLayerProps) -> None:
        super().__init__(scope, construct_id)
        files: list[tuple[Path, Path]] = []
        for package in map(Path, props.packages):
            if not (package / "__init__.py").is_file():
                raise ValueError(f"{package} is not a Python package (no __init__.py)")
            for src in package.rglob("*"):
                rel = src.relative_to(package.parent)
                if not (src.is_file() and _wanted(rel)):
                    continue
                if src.suffix in _COMPILED_SUFFIXES:
                    raise ValueError(f"{src} is a compiled extension: a source layer holds pure Python only")
                files.append((src, rel))
        files = _without(files, props.exclude)
        files = [(src, rel) for src, rel in files if not any(rel.match(helper) for helper in TEST_HELPERS)]
        target, self.digest = _stage(staging_root(self, props.staging_dir), construct_id, files)
        self.staged_at = target
        self.layer = lambda_.LayerVersion(
            self,
            "Layer",
            code=lambda_.Code.from_asset(str(target)),
            compatible_architectures=list(props.compatible_architectures),
            description=props.description[:256],
        )
