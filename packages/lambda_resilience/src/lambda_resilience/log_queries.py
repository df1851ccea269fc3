"""CloudWatch Logs Insights queries over the structured lines the middleware writes (one JSON object a line).

One query reads every function's log group over a time window, server-side filtered on a literal the lines
carry (a correlation ID, an order ID): a bounded read, where FilterLogEvents pages through each group's
whole history. StartQuery takes at most 50 log groups and returns at most 10,000 rows
(https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_StartQuery.html). The stack saves
the same query as an ``AWS::Logs::QueryDefinition`` for the console, with :data:`PLACEHOLDER` to replace.
"""

from __future__ import annotations

#: What a person replaces in the saved query.
PLACEHOLDER = "CORRELATION-OR-ORDER-ID"
#: StartQuery's largest ``limit``.
MAX_ROWS = 10_000
#: StartQuery's largest number of log groups by name.
MAX_LOG_GROUPS = 50


def trace_query(literal: str | None) -> str:
    """Every line whose text holds ``literal`` (a quoted string of safe characters), oldest first; no
    ``literal``: every line of the window (the caller matches exactly on the parsed line)."""
    lines = ["fields @timestamp, @message, @log"]
    if literal:
        lines.append(f"| filter @message like {literal}")
    lines += ["| sort @timestamp asc", f"| limit {MAX_ROWS}"]
    return "\n".join(lines)


#: The query the stack saves for the console (replace the placeholder, pick a time range).
SAVED_TRACE_QUERY = trace_query(f'"{PLACEHOLDER}"')
