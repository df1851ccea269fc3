"""The docs' code blocks taken from runnable files, written into the docs (``python -m tools.doc_snippets``).

A block is a marker comment naming a file and a section, then a ``{.python}`` fence holding that section (a
dedented section is not what ``ruff format`` would make of it alone, and ruff formats ``python`` fences)::

    <!-- --8<-- "examples/travel_booking/cdk_app.py:app" -->
    ```{.python}
    ...the lines between ``# --8<-- [start:app]`` and ``# --8<-- [end:app]`` of that file, dedented...
    ```

The marker names the source as pymdownx.snippets does (Powertools' docs), but the code is in the page itself: a
reader on GitHub, on an index's project page (a README is its package's long description) or in an editor sees it,
with no docs build. ``tests/infra/test_packages.py`` fails when a block differs from its file; this module rewrites
them.
"""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("constructs_lib", "lambda_resilience", "local_cloud", "iam_conditions")
#: The pages holding included blocks.
DOCS = (REPO_ROOT / "docs" / "packages.md", *(REPO_ROOT / "packages" / n / "README.md" for n in PACKAGES))
BLOCK = re.compile(
    r'^<!-- --8<-- "(?P<path>[^":]+):(?P<section>[\w-]+)" -->\n```\{\.python\}\n(?P<code>.*?)^```$', re.M | re.S
)


class SnippetError(ValueError):
    """A marker naming a file or section that does not exist."""


def section(path: str, name: str, root: Path = REPO_ROOT) -> str:
    """The lines of ``root/path`` between its ``# --8<-- [start:name]`` and ``# --8<-- [end:name]``, dedented."""
    source = root / path
    if not source.is_file():
        raise SnippetError(f"{path}: no such file")
    lines = source.read_text().splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.strip() == f"# --8<-- [start:{name}]"]
    ends = [i for i, line in enumerate(lines) if line.strip() == f"# --8<-- [end:{name}]"]
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        raise SnippetError(f"{path}: no single section {name!r} (# --8<-- [start:{name}] ... [end:{name}])")
    return textwrap.dedent("".join(lines[starts[0] + 1 : ends[0]])).strip("\n") + "\n"


def render(text: str, root: Path = REPO_ROOT) -> str:
    """``text`` with every included block holding its section's current code."""

    def fill(match: re.Match[str]) -> str:
        path, name = match["path"], match["section"]
        return f'<!-- --8<-- "{path}:{name}" -->\n```{{.python}}\n{section(path, name, root)}```'

    return BLOCK.sub(fill, text)


def blocks(text: str) -> list[tuple[str, str]]:
    """The (path, section) pairs a page includes."""
    return [(m["path"], m["section"]) for m in BLOCK.finditer(text)]


def main() -> int:
    for doc in DOCS:
        text = doc.read_text()
        if (rendered := render(text)) != text:
            doc.write_text(rendered)
            print(f"doc_snippets: {doc.relative_to(REPO_ROOT)} rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
