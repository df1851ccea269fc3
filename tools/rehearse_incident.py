"""``make rehearse``: one incident, one notification, on MiniStack's own evaluation of the composite alarms.

After ``ops smoke`` (whose "no page by the smoke's own orders" this must not disturb): for each composite alarm
the rehearsal created (:mod:`tools.rehearse_template`), temporary SQS queues subscribed to the stack's page and
ticket topics (``ops smoke``'s :class:`~ops.smoke_pager.PageWatch`), two of the composite's children forced
into ALARM with SetAlarmState (two alarms of one incident), and the ALARM notifications heard on both topics
for ``wait`` seconds: exactly one is expected, the composite's ("If other alarms ... also go into the ALARM
state, your team does not get overloaded with new notifications since the composite alarm has already notified
them": https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-combining.html). The children are
set back to OK, the queues removed, also on failure. MiniStack evaluates a composite's rule when a child
changes state (its CloudWatch, 1.5.33); it evaluates no metric alarm, so the children are forced.
"""

from __future__ import annotations

import re
import time
from contextlib import ExitStack

from ops.smoke_alarms import TOPIC_OUTPUTS
from ops.smoke_pager import PageWatch
from ops.target import Target

#: How long the topics are listened to after the children are forced (MiniStack publishes at once).
WAIT_SECONDS = 10.0
REASON = "make rehearse: one incident, one notification (forced; reset at once)"
_ALARM_TERM = re.compile(r'ALARM\("([^"]+)"\)')


def rule_children(rule: str) -> list[str]:
    """The names of the alarms a composite's rule names in its ``ALARM("arn")`` terms (an alarm's ARN ends
    with ``:alarm:<name>``)."""
    return [arn.split(":alarm:", 1)[-1] for arn in _ALARM_TERM.findall(rule)]


def check_one_notification(
    target: Target, composite: str, children: list[str], wait: float = WAIT_SECONDS, run_id: str = "rehearse"
) -> tuple[str, str]:
    """(expected, observed): the composite's name, and the alarms whose ALARM notification reached the stack's
    topics while two of ``children`` were in ALARM."""
    forced = children[:2]
    cloudwatch = target.client("cloudwatch")
    with ExitStack() as stack:
        watches = []
        for key in TOPIC_OUTPUTS:
            if target.outputs.get(key):
                watch = PageWatch(target, f"{run_id}-{key.lower()}")
                watch.topic = target.outputs[key]
                watches.append(stack.enter_context(watch))
        try:
            for child in forced:
                cloudwatch.set_alarm_state(AlarmName=child, StateValue="ALARM", StateReason=REASON)
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline:
                for watch in watches:
                    watch.listen(wait_seconds=1)
        finally:
            for child in forced:
                cloudwatch.set_alarm_state(AlarmName=child, StateValue="OK", StateReason=REASON)
        heard = [alarm for watch in watches for alarm, state in watch.heard if state == "ALARM"]
    return composite, ", ".join(heard) or "none"
