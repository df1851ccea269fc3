"""tools.doc_snippets: the packages' docs show the code of their runnable example files (issue 42, build 4).
Here, not in tests/infra: a product test imports nothing of the tools (the import contracts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import doc_snippets

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_doc_snippets_docs_show_the_code_of_their_runnable_files() -> None:
    """Each included block names a file and a section that exist, and holds that section's code now: a reader on
    GitHub or on an index's project page sees the code (no docs build renders an include), and it is the code
    ruff, mypy and the example's tests check. ``python -m tools.doc_snippets`` rewrites them."""
    included = [(doc, *found) for doc in doc_snippets.DOCS for found in doc_snippets.blocks(doc.read_text())]
    assert len(included) >= 5
    stale = [
        str(doc.relative_to(REPO_ROOT))
        for doc in doc_snippets.DOCS
        if doc_snippets.render(doc.read_text()) != doc.read_text()
    ]
    assert not stale, f"code blocks differing from their files (run python -m tools.doc_snippets): {stale}"
    assert all(len(doc_snippets.section(path, name).splitlines()) > 3 for _, path, name in included)


def test_doc_snippets_refuse_a_missing_file_or_section(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("x = 0\n    # --8<-- [start:s]\n    y = 1\n    # --8<-- [end:s]\n")
    assert doc_snippets.section("app.py", "s", tmp_path) == "y = 1\n"
    with pytest.raises(doc_snippets.SnippetError, match="no such file"):
        doc_snippets.section("gone.py", "s", tmp_path)
    with pytest.raises(doc_snippets.SnippetError, match="no single section 'other'"):
        doc_snippets.render('<!-- --8<-- "app.py:other" -->\n```{.python}\n```\n', tmp_path)
