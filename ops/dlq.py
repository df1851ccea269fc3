"""``ops dlq list`` / ``ops dlq replay`` / ``ops dlq history``: DLQs by category, replay with a dry run, and the
automatic replays' record.

Reads are for real SQS: long polling, and a DLQ counts as read to its end only after repeated empty receives
with its own counts at zero (:mod:`lambda_resilience.receive`); a look hides each message for the look only.
"""

from __future__ import annotations

import time
from typing import Any

from ops.errors import UsageError
from ops.target import Target, TargetError

#: --queue name -> (source queue output, DLQ output)
QUEUES = {
    "orders": ("OrdersQueueUrl", "OrdersDlqUrl"),
    "needs-attention": ("NeedsAttentionQueueUrl", "NeedsAttentionDlqUrl"),
}
#: Failure categories (``dlq_category``, the failures table's ``category``), then DLQ messages with none.
CATEGORIES = ("transient", "permanent", "unknown")
UNCLASSIFIED = "unclassified"
LISTED_CATEGORIES = (*CATEGORIES, UNCLASSIFIED)


class UnknownQueue(UsageError, TargetError):
    """``--queue`` names no DLQ of the stack."""


def check_replay_request(queue: str, category: str | None, *, force: bool, dry_run: bool) -> None:
    """Refuse a replay request that is a mistake, before any AWS call.

    ``category``: one of :data:`LISTED_CATEGORIES`, or None / ``"all"``. Permanent failures
    fail the same way again, so replaying them needs ``force``; ``unknown`` ones (unexpected
    errors, probably a bug) are replayed without it, once the fix is deployed.
    """
    if queue not in QUEUES:
        raise UnknownQueue(f"unknown queue {queue!r}; choose from {', '.join(sorted(QUEUES))}")
    if category not in (None, "all", *LISTED_CATEGORIES):
        raise UsageError(f"unknown category {category!r}; choose from {', '.join(LISTED_CATEGORIES)}, all")
    if category == "permanent" and not force and not dry_run:
        raise UsageError("permanent failures fail the same way again: replay them with --force (or try --dry-run)")


def lambda_dlq_module() -> Any:
    """The DLQ library lives with the Lambda code (the replay Lambda uses it too)."""
    import lambda_resilience.replay

    return lambda_resilience.replay


def failures_table(target: Target) -> str | None:
    try:
        return target.output("FailuresTableName")
    except TargetError:
        return None


def peek(target: Target, url: str) -> list[Any]:
    """Every message of the DLQ at ``url`` with its category (``lambda_resilience.replay.peek``: each hidden for
    the look only), read with the target's long poll."""
    return list(lambda_dlq_module().peek(target.client, url, failures_table(target), **target.receive_wait()))


def list_queues(target: Target, *, wait_seconds: int | None = None) -> dict[str, dict[str, dict[str, Any]]]:
    """``{queue: {category: {count, oldest_age_seconds}}}`` for every DLQ of the stack (``"not received"``:
    messages the DLQ counts that no receive returned). ``wait_seconds``: the long poll (default: the target's)."""
    dlq = lambda_dlq_module()
    wait = target.receive_wait(wait_seconds)
    out = {}
    for name, (_, dlq_output) in QUEUES.items():
        url = target.output(dlq_output)
        out[name] = dlq.list_dlq(target.client, url, failures_table(target), now=time.time(), **wait)
    return out


def replay_queue(
    target: Target,
    queue: str,
    *,
    category: str | None,
    dry_run: bool,
    max_messages: int | None,
    rate: float | None,
    force: bool,
    wait_seconds: int | None = None,
) -> dict[str, Any]:
    check_replay_request(queue, category, force=force, dry_run=dry_run)
    wait = target.receive_wait(wait_seconds)
    source_output, dlq_output = QUEUES[queue]
    report = lambda_dlq_module().replay(
        target.client,
        target.output(dlq_output),
        target.output(source_output),
        failures_table(target),
        category=category,
        dry_run=dry_run,
        max_messages=max_messages,
        rate_per_second=rate,
        force=force,
        **wait,
    )
    return dict(report.as_dict())


def history(target: Target, hours: float) -> list[dict[str, Any]]:
    """The automatic replays of the last ``hours``, oldest first: one BatchGetItem per 100 hours asked for."""
    from lambda_resilience.replay_history import HOUR, read_history

    table = failures_table(target)
    if table is None:
        raise UsageError("the stack has no FailuresTableName output: no replay history to read")
    return read_history(target.client, table, since_seconds=hours * HOUR)


def format_history(runs: list[dict[str, Any]]) -> str:
    """One line per replayed message (time, DLQ, order, attempt, category, correlation ID), one per empty run."""
    lines = [f"{'time':<21} {'dlq':<24} {'order':<24} {'attempt':>7} {'category':<10} correlation id"]
    for run in runs:
        for m in run["replayed"]:
            attempt = "-" if m.get("attempt") is None else m["attempt"]
            lines.append(
                f"{run['at']:<21} {run['dlq']:<24} {m.get('order_id') or '-':<24} {attempt:>7} "
                f"{m.get('category') or '-':<10} {m.get('correlation_id') or '-'}"
            )
        if run["skipped"] or run.get("not_received"):
            lines.append(
                f"{run['at']:<21} {run['dlq']:<24} skipped {run['skipped']} (see ops dlq list), "
                f"not received {run.get('not_received', 0)}"
            )
    return "\n".join(lines) if runs else "no automatic replay in this window"


def format_list(summary: dict[str, dict[str, dict[str, Any]]]) -> str:
    """One row per queue and category: every category is shown (count 0 when none), then any other found."""
    lines = [f"{'queue':<18} {'category':<14} {'count':>6} {'oldest age':>12}"]
    for queue, categories in summary.items():
        others = sorted(c for c in categories if c not in LISTED_CATEGORIES)
        for category in (*LISTED_CATEGORIES, *others):
            entry = categories.get(category)
            if entry is None:
                lines.append(f"{queue:<18} {category:<14} {0:>6} {'-':>12}")
            else:
                age = entry["oldest_age_seconds"]
                lines.append(f"{queue:<18} {category:<14} {entry['count']:>6} {'-' if age is None else age:>10} s")
    return "\n".join(lines)
