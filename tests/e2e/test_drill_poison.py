"""``make drill``'s poison-message incident (issue 41, point 8) on the local pipeline, as the drill types it.

The page is OrdersAtRisk, a composite alarm: the on-call reads its runbook in the notification, as for every
page. Having looked (``ops dlq list``, a dry run that says the message is permanent), the on-call archives and
discards it with ``ops dlq discard``: the DLQ's alarms and OrdersAtRisk return to OK, and that command
notifies nobody (docs/runbooks/orders-queue.md#discard-a-message).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from harness.drill.console import OpsConsole
from harness.drill.drill import STACK, Drill
from harness.drill.judge import IncidentRun
from harness.run.incidents import ProviderOutage
from harness.run.run import RunOptions, local_pipeline
from local_cloud.faults import FaultCounter
from local_cloud.template import REGION, CloudAssembly

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def poisoned(assembly: CloudAssembly) -> Iterator[tuple[IncidentRun, list[str], str]]:
    """The drill's poison-message incident; the alarms in ALARM after it; the orders DLQ's depth after it."""
    from harness.stack.local_endpoint import subscribe_oncall

    with local_pipeline(RunOptions(assembly_dir=assembly.outdir), assembly) as run:
        outputs = run.deployment.outputs()
        subscribe_oncall(outputs)
        drill = Drill(run, OpsConsole(outputs, REGION, STACK), ProviderOutage(FaultCounter()), seed=41)
        incident = drill.poison_message()
        listed = drill.console.run("dlq", "list", "--json")
        yield incident, run.evaluate_alarms(), listed.output


def test_drill_poison_message_page_names_its_runbook(poisoned: tuple[IncidentRun, list[str], str]) -> None:
    """OrdersAtRisk is a composite alarm: its description, and so its runbook, is the composite's."""
    incident, _, _ = poisoned
    (page,) = incident.notifications
    assert "OrdersAtRisk" in page.alarm and page.severity == "page"
    assert page.runbook.endswith("docs/runbooks/orders-at-risk.md#orders-at-risk"), page


def test_drill_poison_message_is_discarded_and_its_alarms_clear_silently(
    poisoned: tuple[IncidentRun, list[str], str],
) -> None:
    incident, in_alarm, listed = poisoned
    typed = [c.argv[:2] for c in incident.commands]
    assert typed.index(("dlq", "list")) < typed.index(("dlq", "replay")) < typed.index(("dlq", "discard"))
    (discard,) = [c for c in incident.commands if c.argv[:2] == ("dlq", "discard")]
    assert discard.exit_code == 0, discard.output
    assert discard.operations.get("SQS.DeleteMessage") == 1 and discard.operations.get("DynamoDB.PutItem") == 1
    assert incident.operator_notifications == []  # the discard paged nobody (nor an OK e-mail)
    assert in_alarm == [], f"still in ALARM after the discard: {in_alarm}"
    assert "still in ALARM" not in incident.note
    left = {category: seen["count"] for category, seen in json.loads(listed)["orders"].items()}
    assert not any(left.values()), f"the orders DLQ after the discard: {left}"
