"""One incident, one notification: the composite alarms the routed alarms notify through (decision 0030).

An alarm whose runbook names a composite (``Runbook.via``) keeps no action; the composite, ``ALARM`` while any
of them is, notifies its severity's topic once per incident: "When any of those alarms goes into the ALARM
state, the composite alarm goes itself in the ALARM state and sends a notification to your team. If other
alarms ... also go into the ALARM state, your team does not get overloaded with new notifications since the
composite alarm has already notified them"
(https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-combining.html). A composite names at
most 100 underlying alarms (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutCompositeAlarm.html);
it has no OK action (a composite goes from INSUFFICIENT_DATA to OK at its creation: the same page).
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_sns as sns

from stacks.order_constructs.runbooks import ORDERS_AT_RISK, Runbook, Severity, describe

#: "The rule expression of a composite alarm can include as many as 100 underlying alarms" (PutCompositeAlarm).
MAX_CHILDREN = 100
#: Each composite: its runbook (severity, page) and what its page means.
COMPOSITES: dict[str, tuple[Runbook, str]] = {
    ORDERS_AT_RISK: (
        Runbook("orders-at-risk.md", "orders-at-risk", Severity.PAGE),
        "orders are at risk: parked for an operator, dead-lettered, stuck, failing in a step or with a side "
        "effect that disagrees with their status (the alarms in ALARM are named in the state reason).",
    ),
}


def add_incident_alarms(
    stack: Stack, runbooks: Mapping[str, Runbook], base_url: str, topics: Mapping[Severity, sns.ITopic]
) -> dict[str, cloudwatch.CompositeAlarm]:
    """One composite per name of :data:`COMPOSITES` over the routed alarms (``{construct path: runbook}``)
    that notify through it; ``ValueError`` for a ``via`` no composite has, or over 100 children."""
    alarms = {a.node.path: a for a in stack.node.find_all() if isinstance(a, cloudwatch.Alarm)}
    children: dict[str, list[cloudwatch.Alarm]] = {}
    for path, runbook in sorted(runbooks.items()):
        if runbook.via is not None:
            if runbook.via not in COMPOSITES:
                raise ValueError(f"alarm {path} notifies through {runbook.via}, which is not in COMPOSITES")
            children.setdefault(runbook.via, []).append(alarms[path])
    built = {}
    for name, members in children.items():
        if len(members) > MAX_CHILDREN:
            raise ValueError(f"composite {name} over {len(members)} alarms (at most {MAX_CHILDREN})")
        runbook, meaning = COMPOSITES[name]
        composite = cloudwatch.CompositeAlarm(
            stack,
            name,
            alarm_rule=cloudwatch.AlarmRule.any_of(*members),
            alarm_description=describe(meaning, runbook, base_url),
        )
        composite.add_alarm_action(cw_actions.SnsAction(topics[runbook.severity]))
        built[name] = composite
    return built
