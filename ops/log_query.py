"""One CloudWatch Logs Insights query over the stack's log groups and a time window (``ops trace``).

StartQuery, then GetQueryResults until the query completes: a fixed number of calls per 50 log groups,
whatever the groups' history (https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_StartQuery.html,
https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_GetQueryResults.html).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from lambda_resilience.log_queries import MAX_LOG_GROUPS, MAX_ROWS
from ops.errors import OpsError

#: Between two GetQueryResults of a running query.
POLL_SECONDS = 1.0
#: A query still running after this is stopped (StopQuery) and reported.
TIMEOUT_SECONDS = 120.0
DONE = "Complete"
FAILED = ("Failed", "Cancelled", "Timeout", "Unknown")


class QueryFailed(OpsError):
    """Logs Insights did not complete the query."""


def _rows(answer: dict[str, Any]) -> list[dict[str, str]]:
    return [{f["field"]: f["value"] for f in row if "field" in f} for row in answer.get("results", [])]


def _one_query(
    logs: Any, groups: list[str], query: str, window: tuple[int, int], sleep: Callable[[float], None]
) -> Any:
    start, end = window
    query_id = logs.start_query(logGroupNames=groups, startTime=start, endTime=end, queryString=query, limit=MAX_ROWS)[
        "queryId"
    ]
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while True:
        answer = logs.get_query_results(queryId=query_id)
        if answer.get("status") == DONE:
            return _rows(answer)
        if answer.get("status") in FAILED:
            raise QueryFailed(f"the Logs Insights query ended {answer.get('status')}; try a shorter --since")
        if time.monotonic() > deadline:
            logs.stop_query(queryId=query_id)
            raise QueryFailed(f"the Logs Insights query ran over {TIMEOUT_SECONDS:g} s; try a shorter --since")
        sleep(POLL_SECONDS)


def query_groups(
    logs: Any,
    groups: list[str],
    query: str,
    since_seconds: float,
    *,
    now: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> list[dict[str, str]]:
    """The rows of ``query`` over ``groups`` (50 a query) in the last ``since_seconds``. A group that does
    not exist (a function never invoked) is left out: the groups are then queried one at a time."""
    now = time.time() if now is None else now
    window = (int(now - since_seconds), int(now) + 1)
    rows: list[dict[str, str]] = []
    for first in range(0, len(groups), MAX_LOG_GROUPS):
        chunk = groups[first : first + MAX_LOG_GROUPS]
        try:
            rows += _one_query(logs, chunk, query, window, sleep)
        except logs.exceptions.ResourceNotFoundException:
            for group in chunk:
                try:
                    rows += _one_query(logs, [group], query, window, sleep)
                except logs.exceptions.ResourceNotFoundException:
                    continue
    return rows
