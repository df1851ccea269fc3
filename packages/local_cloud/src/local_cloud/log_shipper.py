"""Log shipping: captured handler log lines into moto CloudWatch Logs (what ``ops trace`` reads)."""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Any

from local_cloud.capture import LineCapture
from local_cloud.clients import aws

#: PutLogEvents takes at most this many events per call.
MAX_EVENTS_PER_PUT = 5000


def log_millis(stamp: Any) -> int:
    """Powertools' timestamp (``2026-11-21 05:40:26,747+0000``) in epoch milliseconds."""
    try:
        return int(datetime.strptime(str(stamp), "%Y-%m-%d %H:%M:%S,%f%z").timestamp() * 1000)
    except ValueError:
        return int(time.time() * 1000)


class LogShipper:
    """Ships each captured record once, into the log group of the function (service) that wrote it."""

    def __init__(self, capture: LineCapture, groups: dict[str | None, str | None]) -> None:
        self.capture = capture
        self.groups = groups  # POWERTOOLS_SERVICE_NAME -> log group name
        self.shipped = 0

    def ship(self) -> int:
        """Ship the records captured since the last call; returns how many."""
        logs_client = aws("logs")
        records = self.capture.records()[0][self.shipped :]
        self.shipped += len(records)
        batches: dict[str, list[dict[str, Any]]] = {}
        for record in records:
            group = self.groups.get(record.get("service"))
            if group:
                batches.setdefault(group, []).append(
                    {"timestamp": log_millis(record.get("timestamp")), "message": json.dumps(record)}
                )
        stream = f"local-{int(time.time() * 1000)}"
        for group, events in batches.items():
            logs_client.create_log_stream(logGroupName=group, logStreamName=stream)
            events.sort(key=lambda e: e["timestamp"])
            for start in range(0, len(events), MAX_EVENTS_PER_PUT):
                logs_client.put_log_events(
                    logGroupName=group, logStreamName=stream, logEvents=events[start : start + MAX_EVENTS_PER_PUT]
                )
        return len(records)
