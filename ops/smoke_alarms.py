"""The smoke's alarm checks: the stack's alarms (those whose actions name its page or ticket topic) in ALARM
before and after the run, and those that went to ALARM and cleared in between (alarm history)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ops.smoke_model import POLL_SECONDS, SmokeRun

#: The stack's outputs naming its alarm topics: page (AlarmTopicArn) and ticket (TicketTopicArn).
TOPIC_OUTPUTS = ("AlarmTopicArn", "TicketTopicArn")


class SmokeAlarms(SmokeRun):
    """What the smoke reads of the stack's alarms."""

    def _ours(self, alarm: Mapping[str, Any]) -> bool:
        """An alarm acting on one of the stack's topics (every alarm when the stack names none)."""
        topics = {self.target.outputs[k] for k in TOPIC_OUTPUTS if self.target.outputs.get(k)}
        return not topics or bool(topics & set(alarm.get("AlarmActions", [])))

    def alarms_in_alarm(self) -> set[str]:
        """Names of the stack's alarms (actions to its topics) now in ALARM."""
        names = set()
        paginator = self.target.client("cloudwatch").get_paginator("describe_alarms")
        for page in paginator.paginate(StateValue="ALARM"):
            for alarm in page.get("MetricAlarms", []) + page.get("CompositeAlarms", []):
                if self._ours(alarm):
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
        names = set()
        for page in self.target.client("cloudwatch").get_paginator("describe_alarms").paginate():
            for alarm in page.get("MetricAlarms", []) + page.get("CompositeAlarms", []):
                if self._ours(alarm):
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
