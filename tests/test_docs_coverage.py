"""Every section of the old 968-line README (before commit ``546a98d`` cut it to a front page) is
still findable: in the README, under docs/ (the decision records included) or in a package README.

The old headings are data, copied from ``git show 546a98d^:README.md``; each names the document
that now holds the section and how to find it there: the same heading, a heading by its anchor
(``#slug``, when the heading was reworded), or a keyword of the section's text (when it became a
document's title or a paragraph). Removing or renaming a section without updating this table fails.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.test_docs_links import FENCE, HEADING, ROOT, anchors, slug


class Section(NamedTuple):
    """An old README section and where it lives now."""

    old_heading: str  # as it stood in the old README, with its level
    document: str  # path from the repository root
    marker: str | None = None  # None: the same heading text; "#slug": a heading's anchor; else a keyword


#: The old README's 17 section headings, in order (its two `#   order-123#...` lines are shell output
#: inside a code block, not headings).
OLD_README_SECTIONS = (
    Section("# Resilient order pipeline (AWS CDK, Python)", "README.md"),
    Section(
        "## Quick start (fresh machine: Python 3.11+, Node 20+, npm; no AWS account, no Docker)",
        "README.md",
        "#quick-start-fresh-machine-python-313-node-20-npm-no-aws-account-no-docker",
    ),
    Section("## Message contract (what producers send)", "docs/contract.md"),
    Section("## What the local run is (and is not)", "docs/local-run.md"),
    Section(
        "### How the emulator is built (`harness/`, one module per role)",
        "docs/local-run.md",
        "How the emulator is built: `local_cloud` (the emulator)",
    ),
    Section("### Patches of third-party internals", "docs/local-run.md"),
    Section("### Deploying through moto's own CloudFormation (tried, not adopted)", "docs/local-run.md"),
    Section("## Deploy to AWS", "docs/deploy.md"),
    Section("### Connecting a real provider", "docs/providers.md"),
    Section("## What each folder holds", "docs/design.md"),
    Section("### Using the constructs in your own app", "docs/design.md"),
    Section("## How the guarantees are built", "docs/design.md"),
    Section(
        "### The generic saga construct (`packages/constructs_lib/src/constructs_lib/generic_saga.py`)",
        "docs/design.md",
    ),
    Section(
        "## The middleware package: `lambda_resilience`",
        "packages/lambda_resilience/README.md",
        "Powertools through its public API only",
    ),
    Section("## What it survives", "docs/results.md", "#make-chaos-what-it-survives"),
    Section("## Black Friday: AWS's quotas in the local run (`make spike`)", "docs/local-run.md"),
    Section("## Middleware benchmark (`make bench`)", "docs/results.md", "#make-bench"),
)

#: Passages of the old README that were sections in all but heading (a bold lead) and now live in a
#: decision record or another document: the lead, the document, a keyword of the passage.
OLD_README_PASSAGES = (
    Section("**Payment attempts.**", "docs/contract.md", "**Payment attempts.**"),
    Section("**Limits this relies on**", "docs/contract.md", "**Limits this relies on**"),
    Section("**IAM, as AWS evaluates it**", "docs/local-run.md", "**IAM, as AWS evaluates it**"),
    Section(
        "Public hooks instead?", "docs/decisions/0009-patch-moto-under-canaries.md", "The public hooks do not reach"
    ),
    Section(
        "What Express would cost in guarantees",
        "docs/decisions/0001-standard-workflow-not-express.md",
        "What Express would cost in guarantees",
    ),
    Section(
        "**The order saga's outcome is written by Step Functions itself.**",
        "docs/decisions/0002-direct-service-integrations-for-outcome-writes.md",
        "States entered per path",
    ),
    Section(
        "**What happened before** / **What holds now** (throttles)",
        "docs/decisions/0012-requeue-throttled-records-with-a-delay.md",
        "What happened before",
    ),
    Section(
        "The Tracer is created at import on purpose",
        "docs/decisions/0013-keep-trace-subsegments-over-the-import-target.md",
        "created at import on purpose",
    ),
    Section("**Dead-letter discipline.**", "docs/design.md", "**Dead-letter discipline.**"),
    Section("**Speed (met: under 150 s).**", "docs/results.md", "#make-chaos-what-it-survives"),
    Section("**Similitude.**", "docs/local-run.md", "**Similitude.**"),
    Section("**Capacity from the template**", "docs/local-run.md", "**Capacity from the template.**"),
    Section("**Cost per order**", "docs/results.md", "#make-bench"),
)

DECISIONS = ROOT / "docs" / "decisions"
RECORD_NAME = re.compile(r"^\d{4}-[a-z0-9-]+\.md$")


def heading_text(heading: str) -> str:
    """The text of a Markdown heading line, without its ``#`` marks."""
    return heading.lstrip("#").strip()


def findable(text: str, section: Section) -> bool:
    """Whether ``text`` (a document) holds ``section``: its heading, its anchor, or its keyword."""
    prose = FENCE.sub("", text)
    if section.marker is None:
        return heading_text(section.old_heading) in {h.strip() for h in HEADING.findall(prose)}
    if section.marker.startswith("#"):
        return section.marker[1:] in {slug(h) for h in HEADING.findall(prose)}
    return section.marker in text


def _ids(section: Section) -> str:
    return heading_text(section.old_heading)[:60]


def test_docs_coverage_table_holds_the_old_readme_headings() -> None:
    headings = [s.old_heading for s in OLD_README_SECTIONS]
    assert len(headings) == 17 == len(set(headings))
    assert all(re.match(r"^#{1,3} \S", h) for h in headings)


@pytest.mark.parametrize("section", OLD_README_SECTIONS + OLD_README_PASSAGES, ids=_ids)
def test_docs_coverage_old_section_is_findable(section: Section) -> None:
    path = ROOT / section.document
    assert path.is_file(), f"{section.old_heading!r}: {section.document} does not exist"
    assert findable(path.read_text(), section), (
        f"{section.old_heading!r} is no longer findable in {section.document} (looked for "
        f"{section.marker or 'the same heading'}): move it back, or point this table at its new home"
    )


def test_docs_coverage_removed_section_is_not_findable() -> None:
    by_heading = Section("### Patches of third-party internals", "docs/local-run.md")
    by_anchor = OLD_README_SECTIONS[1]
    text = (ROOT / by_heading.document).read_text()
    assert findable(text, by_heading)
    assert not findable(text.replace("### Patches of third-party internals\n", ""), by_heading)
    readme = (ROOT / "README.md").read_text()
    assert findable(readme, by_anchor)
    assert not findable(re.sub(r"^## Quick start.*$", "## Start here", readme, flags=re.MULTILINE), by_anchor)
    # A heading quoted inside a code block is not a section.
    assert not findable("```\n### Patches of third-party internals\n```\n", by_heading)


def test_docs_coverage_decisions_index_lists_every_record() -> None:
    records = sorted(p.name for p in DECISIONS.glob("*.md") if p.name != "README.md")
    index = (DECISIONS / "README.md").read_text()
    assert records, "docs/decisions/ holds no record"
    assert all(RECORD_NAME.match(name) for name in records), records
    assert [int(name[:4]) for name in records] == list(range(1, len(records) + 1)), "numbered 0001, 0002, ..."
    missing = [name for name in records if f"]({name})" not in index]
    assert not missing, f"docs/decisions/README.md does not list {missing}"


@pytest.mark.parametrize(
    "record", sorted(p for p in DECISIONS.glob("*.md") if p.name != "README.md"), ids=lambda p: p.stem
)
def test_docs_coverage_decision_record_has_context_decision_consequences(record: Path) -> None:
    text = record.read_text()
    assert text.startswith(f"# {record.name[:4]}. "), "the title starts with the record's number"
    assert {"context", "decision", "consequences"} <= anchors(record)
    assert re.search(r"^- \*\*Date\*\*: \d{4}-\d{2}-\d{2}", text, re.MULTILINE), "a dated record"
    assert re.search(r"\]\(\.\./\.\./[^)]+\)", text), "a link to the code it concerns"


def test_docs_coverage_design_opens_with_map_graph_and_glossary() -> None:
    """A newcomer's first two screens (100 lines) of docs/design.md: the map, the saga's graph, the glossary."""
    lines = (ROOT / "docs" / "design.md").read_text().splitlines()
    headings = [i for i, line in enumerate(lines) if line.startswith("## ")]
    first = [lines[i] for i in headings[:4]]
    assert first[:3] == [
        "## Map: the product, the harness, and what may import what",
        "## The saga's state graph",
        "## Glossary",
    ]
    assert headings[3] <= 100, "the glossary ends past the second screen"


def test_docs_coverage_decision_0018_is_a_record() -> None:
    """0018 reads in a minute (its research is a note under docs/research/); its title promises no tracing (0019)."""
    record = (DECISIONS / "0018-order-api-front-door.md").read_text()
    assert len(record.splitlines()) <= 80
    assert "trac" not in record.splitlines()[0].lower()
