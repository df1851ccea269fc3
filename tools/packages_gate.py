"""``make packages``: the four packages as a team gets them, outside this repository.

1. Each package is copied out of the repository (only its own folder: a path outside it would break the build)
   and built into a wheel (``pip wheel --no-deps --no-build-isolation``, on a build virtualenv holding the pinned
   backend, made once).
2. The wheels are installed into a virtualenv outside the repository, ``--no-index --no-deps --force-reinstall``
   (never a same-named package from an index). The third-party packages they require are installed there once, at
   the versions this repository's virtualenv was tested with (``pip freeze``; rebuilt when those change).
3. ``pip check``; each package imported from that virtualenv (not from the repository), its ``__version__`` the
   wheel's, its ``py.typed`` shipped.
4. With ``--example``: the example app (examples/travel_booking), copied outside the repository, runs its tests
   there (handlers on moto, the synth with ResilienceChecks, the local run on ``python -m local_cloud``).

Steps 1 and 2 are skipped when the packages' sources are those of the wheels already installed there (a hash of
their folders): ``make test`` pays for them only after a change to a package.

The gate's folder is ``$PACKAGES_GATE_DIR``, default ``~/.cache/resilient-order-pipeline/packages-gate``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import tomllib
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("iam_conditions", "constructs_lib", "lambda_resilience", "local_cloud")
EXAMPLE = REPO_ROOT / "examples" / "travel_booking"
#: What is never copied out of a package or the example.
LEFT_BEHIND = shutil.ignore_patterns("*.egg-info", "build", "dist", "__pycache__", "*.pyc", "cdk.out", ".pytest_cache")
LEFT_OUT = re.compile(r".*\.egg-info|build|dist|__pycache__|.*\.pyc|cdk\.out|\.pytest_cache")
EXTRA_TEST_REQUIREMENTS = ("pytest",)


def gate_dir() -> Path:
    default = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "resilient-order-pipeline"
    path = Path(os.environ.get("PACKAGES_GATE_DIR") or default / "packages-gate").resolve()
    if path.is_relative_to(REPO_ROOT):
        raise SystemExit(f"packages gate: {path} is inside the repository; the point is to install outside it")
    return path


def run(*command: str | Path, cwd: Path | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PIP_REQUIRE_VIRTUALENV")}
    done = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"packages gate: {' '.join(map(str, command))} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def virtualenv(path: Path, key: str, requirements: list[str]) -> Path:
    """``path``'s python, (re)made when ``key`` (what it must hold) changed."""
    python, stamp = path / "bin" / "python", path / ".gate-key"
    if not (stamp.is_file() and stamp.read_text() == key and python.exists()):
        shutil.rmtree(path, ignore_errors=True)
        run(sys.executable, "-m", "venv", path)
        if requirements:
            run(python, "-m", "pip", "install", "--quiet", *requirements)
        stamp.write_text(key)
    return python


def sources_key() -> str:
    """A hash of the four package folders as they would be copied (what the wheels are built from)."""
    digest = hashlib.sha256()
    for name in PACKAGES:
        root = REPO_ROOT / "packages" / name
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            relative = path.relative_to(root)
            if any(LEFT_OUT.fullmatch(part) for part in relative.parts):
                continue
            digest.update(f"{name}/{relative}\n".encode() + path.read_bytes())
    return digest.hexdigest()


def build_wheels(gate: Path) -> list[Path]:
    """The four wheels, each built from a copy of its package folder alone."""
    (backend,) = tomllib.loads((REPO_ROOT / "packages" / PACKAGES[0] / "pyproject.toml").read_text())["build-system"][
        "requires"
    ]
    builder = virtualenv(gate / "build-venv", backend, [backend, "wheel"])
    sources, wheels = gate / "sources", gate / "wheels"
    for folder in (sources, wheels):
        shutil.rmtree(folder, ignore_errors=True)
    for name in PACKAGES:
        shutil.copytree(REPO_ROOT / "packages" / name, sources / name, ignore=LEFT_BEHIND)
    paths = [sources / name for name in PACKAGES]
    run(builder, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--wheel-dir", wheels, *paths)
    built = sorted(wheels.glob("*.whl"))
    if len(built) != len(PACKAGES):
        raise SystemExit(f"packages gate: expected {len(PACKAGES)} wheels, built {[w.name for w in built]}")
    return built


def third_party_requirements() -> list[str]:
    """What the packages require that is not one of them, pinned as this repository's virtualenv has it."""
    ours = {name.replace("_", "-") for name in PACKAGES}
    wanted: set[str] = set(EXTRA_TEST_REQUIREMENTS)
    for name in PACKAGES:
        project = tomllib.loads((REPO_ROOT / "packages" / name / "pyproject.toml").read_text())["project"]
        wanted |= {r for r in project.get("dependencies", []) if re.split(r"[\[<>=!~ ]", r)[0] not in ours}
    frozen = run(sys.executable, "-m", "pip", "freeze", "--exclude-editable").splitlines()
    return sorted(wanted) + _constraints(frozen)


def _constraints(frozen: list[str]) -> list[str]:
    lines = [line for line in frozen if "==" in line and not line.startswith(("-e", "#"))]
    path = gate_dir() / "constraints.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return ["--constraint", str(path)]


def _closure(requirements: list[str]) -> set[str]:
    """The distributions ``requirements`` need, transitively, as this repository's virtualenv resolved them."""
    from importlib import metadata

    from packaging.requirements import Requirement

    todo = [Requirement(r) for r in requirements if not r.startswith("--") and "/" not in r]
    seen: set[str] = set()
    while todo:
        requirement = todo.pop()
        name = re.sub(r"[-_.]+", "-", requirement.name).lower()
        if name in seen or name in {p.replace("_", "-") for p in PACKAGES}:
            continue
        seen.add(name)
        for text in metadata.requires(requirement.name) or []:
            child = Requirement(text)
            extras = requirement.extras or {""}
            if child.marker is None or any(child.marker.evaluate({"extra": e}) for e in extras):
                todo.append(child)
    return seen


def seed_third_party(venv: Path, requirements: list[str]) -> None:
    """The third-party distributions the packages require, hard-linked (copied across devices) from this
    repository's virtualenv, the versions it was tested with: ``pip install`` from an index took about a minute
    on every fresh clone (aws-cdk-lib's bundled jsii assembly, moto). The four packages themselves are still
    installed by pip from their wheels, and ``pip check`` judges the whole set."""
    from importlib import metadata

    wanted, source = _closure(requirements), Path(sysconfig.get_paths()["purelib"]).resolve()
    (target,) = (venv / "lib").glob("python3*/site-packages")
    for dist in metadata.distributions():
        name = re.sub(r"[-_.]+", "-", dist.metadata["Name"]).lower()
        if name not in wanted or Path(str(dist.locate_file(""))).resolve() != source:
            continue
        for file in dist.files or []:
            path = Path(str(dist.locate_file(file))).resolve()
            if not path.is_relative_to(source) or not path.is_file():
                continue  # console scripts (bin/): none is used here
            copy = target / path.relative_to(source)
            if copy.exists():
                continue  # a file two distributions list (a namespace package's __init__)
            copy.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(path, copy)
            except OSError:
                shutil.copy2(path, copy)


IMPORT_CHECK = """
import importlib, importlib.metadata, pathlib, sys
prefix = pathlib.Path(sys.prefix).resolve()
for module, dist in {pairs!r}:
    m = importlib.import_module(module)
    where = pathlib.Path(m.__file__).resolve()
    assert where.is_relative_to(prefix), f"{{module}} imported from {{where}}, not from the gate's virtualenv"
    assert m.__version__ == importlib.metadata.version(dist), f"{{module}}: __version__ is not the wheel's"
    assert (where.parent / "py.typed").is_file(), f"{{module}}: no py.typed in the wheel"
    print(f"{{dist}} {{m.__version__}} from {{where.parent}}")
"""


def install_and_check(gate: Path) -> Path:
    """The gate's virtualenv with the wheels of the current sources installed (built and installed only when the
    sources changed), checked."""
    requirements = third_party_requirements()
    key = hashlib.sha256("\n".join(requirements).encode() + Path(requirements[-1]).read_bytes()).hexdigest()
    python = virtualenv(gate / "venv", key, [])
    if not (gate / "venv" / ".gate-seeded").is_file():
        seed_third_party(gate / "venv", requirements)
        (gate / "venv" / ".gate-seeded").write_text(key)
    installed, sources = gate / "venv" / ".gate-installed", sources_key()
    if not (installed.is_file() and installed.read_text() == sources):
        wheels = build_wheels(gate)
        print(f"packages gate: built {', '.join(w.name for w in wheels)}")
        run(python, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--force-reinstall", *wheels)
        run(python, "-m", "pip", "check")
        installed.write_text(sources)
    pairs = [(name, name.replace("_", "-")) for name in PACKAGES]
    print(run(python, "-c", IMPORT_CHECK.format(pairs=pairs), cwd=gate), end="")
    return python


def run_example(gate: Path, python: Path) -> None:
    copy = gate / "example"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(EXAMPLE, copy, ignore=LEFT_BEHIND)
    print(run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=copy).strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.packages_gate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--example", action="store_true", help="also run the example app's tests there")
    args = parser.parse_args(argv)
    started, gate = time.monotonic(), gate_dir()
    gate.mkdir(parents=True, exist_ok=True)
    python = install_and_check(gate)
    print(f"packages gate: installed and imported in {python.parents[1]} ({time.monotonic() - started:.1f} s)")
    if args.example:
        run_example(gate, python)
    print(f"packages gate: passed in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
