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
