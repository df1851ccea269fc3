"""A runbook behind every page: every alarm of both templates links its page under docs/runbooks/
(the heading exists), every runbook is linked, and every ``ops`` command they name exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ops.cli import build_parser
from stacks.order_constructs.runbooks import (
    DEFAULT_RUNBOOK_BASE_URL,
    MAX_DESCRIPTION,
    RUNBOOK_DIR,
    check_runbook_base_url,
)
from tests.infra.conftest import REPO_ROOT, SynthResult, synth_pipeline

RUNBOOKS = REPO_ROOT / RUNBOOK_DIR
LINK = re.compile(r"Runbook: (?P<base>\S*?)(?P<page>[a-z0-9-]+\.md)#(?P<anchor>[a-z0-9-]+)$")
OPS_COMMAND = re.compile(r"\bops ([a-z][a-z-]*)")


def _descriptions(synth: SynthResult) -> dict[str, str]:
    alarms = {**synth.of_type("AWS::CloudWatch::Alarm"), **synth.of_type("AWS::CloudWatch::CompositeAlarm")}
    return {k: a["Properties"].get("AlarmDescription", "") for k, a in alarms.items()}


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lowercased, punctuation dropped, spaces to dashes."""
    headings = re.findall(r"^#+ (.+)$", page.read_text(), flags=re.MULTILINE)
    return {re.sub(r"[^a-z0-9 -]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def _links(synth: SynthResult) -> dict[str, re.Match[str]]:
    found = {}
    for logical_id, description in _descriptions(synth).items():
        match = LINK.search(description)
        assert match, f"{logical_id}: no runbook link in {description!r}"
        found[logical_id] = match
    return found


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_runbooks_every_alarm_links_an_existing_runbook(stage: str, request: pytest.FixtureRequest) -> None:
    synth: SynthResult = request.getfixturevalue(stage)
    links = _links(synth)
    assert links
    for logical_id, match in links.items():
        assert match["base"] == DEFAULT_RUNBOOK_BASE_URL, logical_id
        page = RUNBOOKS / match["page"]
        assert page.is_file(), f"{logical_id}: {page} does not exist"
        assert match["anchor"] in _anchors(page), f"{logical_id}: no heading #{match['anchor']} in {page.name}"
    assert all(len(d) <= MAX_DESCRIPTION for d in _descriptions(synth).values())


def test_runbooks_every_runbook_is_linked(dev: SynthResult, prod: SynthResult) -> None:
    linked = {m["page"] for synth in (dev, prod) for m in _links(synth).values()}
    pages = {p.name for p in RUNBOOKS.glob("*.md")} - {"README.md"}
    assert pages == linked


def test_runbooks_every_alarm_carries_a_severity(dev: SynthResult, prod: SynthResult) -> None:
    for synth in (dev, prod):
        for logical_id, description in _descriptions(synth).items():
            assert re.match(r"\[(page|ticket)\] ", description), f"{logical_id}: {description!r}"


def _ops_verbs() -> set[str]:
    actions = build_parser()._subparsers._group_actions  # type: ignore[union-attr]
    return {name for action in actions for name in getattr(action, "choices", {})}


def test_runbooks_name_only_ops_commands_that_exist(dev: SynthResult, prod: SynthResult) -> None:
    verbs = _ops_verbs()
    assert {"trace", "repair", "dlq"} <= verbs
    texts: list[tuple[str, str]] = [(p.name, p.read_text()) for p in RUNBOOKS.glob("*.md")]
    texts += [(k, d) for synth in (dev, prod) for k, d in _descriptions(synth).items()]
    for where, text in texts:
        for verb in OPS_COMMAND.findall(text):
            assert verb in verbs, f"{where}: `ops {verb}` is not a command of the ops CLI"


def test_runbooks_base_url_from_context(tmp_path: Path) -> None:
    base = "https://github.com/example/order-pipeline/blob/main/docs/runbooks/"
    synth = synth_pipeline(tmp_path, stage="dev", runbook_base_url=base)
    assert all(m["base"] == base for m in _links(synth).values())


@pytest.mark.parametrize(
    "value", ["http://docs.example.com/runbooks/", "https://docs.example.com/runbooks", "", "a b/"]
)
def test_runbooks_base_url_rejects_a_bad_value(value: str) -> None:
    with pytest.raises(ValueError, match="runbook_base_url"):
        check_runbook_base_url(value)
