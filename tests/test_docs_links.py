"""Relative links in the README, docs/ (the decision records included) and the package READMEs
resolve: the file exists, and an ``#anchor`` names a heading of that file (GitHub's slug rules)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = sorted([ROOT / "README.md", *ROOT.glob("docs/**/*.md"), *ROOT.glob("packages/*/README.md")])
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*)$", re.MULTILINE)
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (but ``-`` and ``_``), spaces to ``-``."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {slug(h) for h in HEADING.findall(FENCE.sub("", path.read_text()))}


def links(path: Path) -> list[str]:
    return [t for t in LINK.findall(FENCE.sub("", path.read_text())) if not re.match(r"[a-z]+:", t)]


def test_docs_links_slug_follows_github_rules() -> None:
    assert slug("The middleware package: `lambda_resilience`") == "the-middleware-package-lambda_resilience"
    assert slug("Black Friday: AWS's quotas in the local run (`make spike`)") == (
        "black-friday-awss-quotas-in-the-local-run-make-spike"
    )


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_links_resolve(document: Path) -> None:
    broken = []
    for target in links(document):
        file_part, _, anchor = target.partition("#")
        path = (document.parent / file_part).resolve() if file_part else document
        if not path.exists():
            broken.append(f"{target}: no such file")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"{target}: no heading #{anchor} in {path.relative_to(ROOT)}")
    assert not broken, f"{document.relative_to(ROOT)}: " + "; ".join(broken)


def test_docs_links_readme_is_for_newcomers() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 250


#: A code reference: a path in backticks from the repository root (``stacks/app_builder.py``,
#: ``tests/infra/test_api.py::test_x``, ``harness/``); placeholders (``lambdas/<function>/``,
#: ``api_templates/*.vtl``) are not checked.
CODE_REF = re.compile(r"`([^`\s]+)`")
ROOT_ENTRIES = ("app.py", "stacks/", "constructs_lib/", "lambdas/", "packages/", "ops/", "tools/", "tests/", "docs/",
                "examples/", "Makefile", "pyproject.toml", "cdk.json", "requirements")  # fmt: skip
PLACEHOLDER = re.compile(r"[<>*{}$\[\]]|\.\.\.")


def code_references(text: str) -> list[str]:
    """The repository paths ``text`` names in backticks (code blocks included: a command names real files)."""
    found = []
    for ref in CODE_REF.findall(text):
        path = re.sub(r"(::[\w.\[\]-]+|:\d+(-\d+)?|#.*)$", "", ref).rstrip(",.;:)")
        if path.startswith(ROOT_ENTRIES) and not PLACEHOLDER.search(path):
            found.append(path)
    return found


def test_docs_links_code_reference_scanner_sees_paths() -> None:
    refs = code_references("see `stacks/app.py`, `tests/infra/test_api.py::test_x`, `lambdas/<fn>/handler.py`, `x.py`")
    assert refs == ["stacks/app.py", "tests/infra/test_api.py"]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_links_code_references_exist(document: Path) -> None:
    """Every file or folder a document names in backticks exists (no reference to a file that was moved)."""
    missing = sorted({ref for ref in code_references(document.read_text()) if not (ROOT / ref).exists()})
    assert not missing, f"{document.relative_to(ROOT)}: no such file: {', '.join(missing)}"


def test_docs_links_readme_diagrams_fit_120_columns() -> None:
    """A code block (the pipeline diagram, commands) reads without horizontal scrolling."""
    wide = [
        line
        for block in FENCE.findall((ROOT / "README.md").read_text())
        for line in block.splitlines()
        if len(line) > 120
    ]
    assert wide == []
