"""The pager as a person sees it in the local run: every alarm notification, delivered or refused."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from local_cloud.alarm_actions import AlarmActions, Notice


def page_line(notice: Notice) -> str:
    """One alarm notification as the page log shows it (delivered to the topic's subscribers, or refused)."""
    when = datetime.fromtimestamp(notice.at, UTC).strftime("%H:%M:%S")
    outcome = "delivered" if notice.delivered else f"REFUSED ({notice.refusal})"
    return f"page {notice.state} {notice.alarm} at {when} (simulated): {notice.reason}; {outcome}"


def pages(actions: AlarmActions | None) -> list[dict[str, Any]]:
    """Every ALARM notification of the run (a page), delivered or refused, in order."""
    return [
        {
            "alarm": n.alarm,
            "at": round(n.at, 3),
            "reason": n.reason,
            "delivered": n.delivered,
            "refusal": n.refusal,
        }
        for n in (actions.history if actions else [])
        if n.state == "ALARM"
    ]
