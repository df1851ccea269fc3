"""The smoke's alarm checks: the stack's alarms (those whose actions name its alarm topic) in ALARM before and
after the run, and those that went to ALARM and cleared in between (alarm history)."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from ops.smoke_model import POLL_SECONDS, SmokeRun


class SmokeAlarms(SmokeRun):
    """What the smoke reads of the stack's alarms."""

    def alarms_in_alarm(self) -> set[str]:
        """Names of the stack's alarms (actions to its alarm topic) now in ALARM."""
        topic = self.target.outputs.get("AlarmTopicArn")
        names = set()
        paginator = self.target.client("cloudwatch").get_paginator("describe_alarms")
        for page in paginator.paginate(StateValue="ALARM"):
            for alarm in page.get("MetricAlarms", []) + page.get("CompositeAlarms", []):
                if topic is None or topic in alarm.get("AlarmActions", []):
                    names.add(alarm["AlarmName"])
        return names

    def alarms_raised_since(self, started: datetime) -> set[str]:
        """The stack's alarms that went to ALARM since ``started`` (alarm history), as far as it is kept."""
        names: set[str] = set()
        try:
            pages = (
                self.target.client("cloudwatch")
                .get_paginator("describe_alarm_history")
                .paginate(HistoryItemType="StateUpdate", StartDate=started, EndDate=datetime.now(UTC))
            )
            for page in pages:
                for item in page.get("AlarmHistoryItems", []):
                    if item.get("HistorySummary", "").endswith("to ALARM"):
                        names.add(item["AlarmName"])
        except Exception:  # an endpoint without alarm history (an emulator): nothing to add to the notes
            return set()
        topic_alarms = self._stack_alarm_names()
        return names & topic_alarms if topic_alarms else names

    def _stack_alarm_names(self) -> set[str]:
        topic = self.target.outputs.get("AlarmTopicArn")
        names = set()
        for page in self.target.client("cloudwatch").get_paginator("describe_alarms").paginate():
            for alarm in page.get("MetricAlarms", []) + page.get("CompositeAlarms", []):
                if topic is None or topic in alarm.get("AlarmActions", []):
                    names.add(alarm["AlarmName"])
        return names

    def _check_alarms(self, before: set[str]) -> None:
        deadline = time.monotonic() + self.options.alarm_wait_seconds
        while True:
            left = sorted(self.alarms_in_alarm() - before)
            if not left or time.monotonic() > deadline:
                break
            self.pause(5 * POLL_SECONDS)
        self.report.check("alarms left in ALARM by the smoke", "none", ", ".join(left) or "none")
        raised = sorted(self.alarms_raised_since(self.started_at) - before)
        if raised:
            self.report.notes.append(f"went to ALARM during the smoke (and cleared): {', '.join(raised)}")
        if before:
            self.report.notes.append(f"already in ALARM before the smoke: {', '.join(sorted(before))}")
