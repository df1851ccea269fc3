"""docs/results.md holds the current figures, one section per command a user can run, each dated with that
command; the history is in git (``git log -p docs/results.md``), from the commit its first lines name."""

from __future__ import annotations

import re
import subprocess

from tests.test_docs_links import FENCE, ROOT

RESULTS = ROOT / "docs" / "results.md"
MAKEFILE = ROOT / "Makefile"
#: Targets that set up, list or clean, or re-record a fixture: they measure nothing.
TOOLING = frozenset({"help", "setup", "velocity-engine", "engines-record", "clean"})
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
HELP_TARGET = re.compile(r"^([a-z-]+):.*## ", re.MULTILINE)


def measured_targets(makefile: str) -> list[str]:
    """The Makefile's targets with a ``##`` help line that a user runs for a result."""
    return [t for t in HELP_TARGET.findall(makefile) if t not in TOOLING]


def sections(text: str) -> dict[str, str]:
    """``## `` headings (outside code blocks) to their text, up to the next ``## `` heading."""
    prose = FENCE.sub("", text)
    parts = re.split(r"^## (.*)$", prose, flags=re.MULTILINE)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


def command_sections(text: str) -> dict[str, str]:
    """The sections whose heading names a ``make`` target, by that target."""
    found = {}
    for heading, body in sections(text).items():
        for target in re.findall(r"`make ([a-z-]+)`", heading):
            found[target] = body
    return found


def missing_sections(results: str, makefile: str) -> list[str]:
    """Targets with no section of their own and not named in the section of ``make test``."""
    own = command_sections(results)
    test_section = own.get("test", "")
    return [t for t in measured_targets(makefile) if t not in own and f"make {t}" not in test_section]


def undated_sections(results: str) -> list[str]:
    """Command sections without a date or without the command, in backticks, that they measured."""
    return [
        target
        for target, body in command_sections(results).items()
        if not DATE.search(body) or not re.search(rf"`(make {target}|python -m [a-z_.]+)\b", body)
    ]


def test_docs_results_scanner_sees_sections_and_their_dates() -> None:
    makefile = "demo: setup ## run it\nclean: ## remove\nchaos: setup ## faults\nlint: ## ruff\ntest: ## all\n"
    results = (
        "# R\n\n## `make test`\n\n| `make test` | 2026-11-28 |\n\nIts gates: `make lint`.\n\n"
        "## `make demo`\n\n| 20 orders | `make demo` | 2026-11-25 |\n\n## `make chaos`\n\nlost sales: 55\n"
    )
    assert measured_targets(makefile) == ["demo", "chaos", "lint", "test"]
    assert missing_sections(results, makefile) == []
    assert missing_sections(results.replace("`make lint`", "lint"), makefile) == ["lint"]
    assert undated_sections(results) == ["chaos"]
    assert undated_sections(results.replace("lost sales: 55", "| `make chaos` | 2026-11-28 |")) == []


def test_docs_results_every_command_has_a_dated_section() -> None:
    results, makefile = RESULTS.read_text(), MAKEFILE.read_text()
    assert missing_sections(results, makefile) == [], "a `## ` section per command in docs/results.md"
    assert undated_sections(results) == [], "each section dates its figures and names its command"


def test_docs_results_names_the_commit_of_its_history() -> None:
    head = RESULTS.read_text().split("\n## ", 1)[0]
    assert "git log -p docs/results.md" in head
    commits = re.findall(r"`([0-9a-f]{7,40})`", head)
    assert commits, "the commit of the last notebook version, in backticks"
    for commit in commits:
        found = subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=ROOT, capture_output=True)
        assert found.returncode == 0, f"{commit} is not a commit of this repository"


def test_docs_results_lists_what_is_still_open() -> None:
    assert "Open" in sections(RESULTS.read_text()), "a section listing figures not measured yet or stale"


def test_docs_results_stays_current_not_a_notebook() -> None:
    assert len(RESULTS.read_text().splitlines()) <= 300


def test_docs_results_readme_quotes_the_current_fault_matrix() -> None:
    readme_cells = re.findall(r"([\d,]+) cells", (ROOT / "README.md").read_text())
    faults = command_sections(RESULTS.read_text())["faults"]
    assert readme_cells, "the README's make faults row quotes the matrix's size"
    assert all(f"{n} cells" in faults for n in readme_cells), (readme_cells, "not in results.md's make faults")
