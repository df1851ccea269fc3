"""The four packages (packages/*) stand on their own: each builds from its own pyproject (src layout, a pinned
build backend), has a version, a changelog naming it and ``py.typed``; no library module refers to this
repository (its docs, make targets, app, workshop or stacks), since a team installs the wheel without it.
The wheels themselves are built and installed into a clean virtualenv by ``make packages`` (tools/packages_gate.py).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from tests.infra.conftest import REPO_ROOT

PACKAGES = ("constructs_lib", "lambda_resilience", "local_cloud", "iam_conditions")
#: What only this repository has: its docs ('docs/', not a URL's), its make targets ('make <target>' for any target
#: of the Makefile, not the verb), its app (OrderPipeline), its workshop (harness) and its stacks ('stacks.', not
#: 'thread_stacks.').
MAKE_TARGETS = re.findall(r"^([a-z][a-z-]*):", (REPO_ROOT / "Makefile").read_text(), flags=re.MULTILINE)
REPOSITORY_WORDS = re.compile(
    r"(?<![\w./-])docs/|\bmake (?:" + "|".join(map(re.escape, MAKE_TARGETS)) + r")\b|OrderPipeline|\bharness\b"
    r"|(?<![\w.])stacks\."
)


def _package_dir(name: str) -> Path:
    return REPO_ROOT / "packages" / name


@pytest.mark.parametrize("name", PACKAGES)
def test_packages_each_builds_from_its_own_src_layout(name: str) -> None:
    pyproject = tomllib.loads((_package_dir(name) / "pyproject.toml").read_text())
    (backend,) = pyproject["build-system"]["requires"]
    assert re.fullmatch(r"setuptools==[\d.]+", backend), f"{name}: pin the build backend, not {backend!r}"
    assert pyproject["tool"]["setuptools"]["packages"]["find"]["where"] == ["src"]
    assert (_package_dir(name) / "src" / name / "__init__.py").is_file()
    assert (_package_dir(name) / "src" / name / "py.typed").is_file()
    assert pyproject["tool"]["setuptools"]["package-data"][name] == ["py.typed"]


@pytest.mark.parametrize("name", PACKAGES)
def test_packages_version_is_in_pyproject_module_and_changelog(name: str) -> None:
    version = tomllib.loads((_package_dir(name) / "pyproject.toml").read_text())["project"]["version"]
    init = (_package_dir(name) / "src" / name / "__init__.py").read_text()
    assert f'__version__ = "{version}"' in init, f"{name}/__init__.py: __version__ differs from pyproject's"
    changelog = (_package_dir(name) / "CHANGELOG.md").read_text()
    assert f"## [{version}]" in changelog, f"{name}: CHANGELOG.md has no section for {version}"
    assert "## [Unreleased]" in changelog


def test_packages_repository_words_are_found_where_they_name_this_repository() -> None:
    assert MAKE_TARGETS and "chaos" in MAKE_TARGETS
    named = ["see docs/decisions/0020", "run `make setup`", "OrderPipeline-dev", "harness.run", "from stacks.app"]
    assert all(REPOSITORY_WORDS.search(line) for line in named)
    fine = ["https://docs.aws.amazon.com/cdk/api/v2/docs/x", "make the emulator faster", "thread_stacks.reserve"]
    assert not any(REPOSITORY_WORDS.search(line) for line in fine)


def test_packages_constructs_lib_is_no_longer_at_the_root() -> None:
    assert not (REPO_ROOT / "constructs_lib").exists()


@pytest.mark.parametrize("name", PACKAGES)
def test_packages_sources_name_nothing_of_this_repository(name: str) -> None:
    found = [
        f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()}"
        for path in sorted((_package_dir(name) / "src").rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if REPOSITORY_WORDS.search(line)
    ]
    assert not found, "a library module refers to this repository:\n" + "\n".join(found)
