"""``ops dlq list`` / ``ops dlq replay``: DLQs by category, replay with a dry run."""

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


def list_queues(target: Target) -> dict[str, dict[str, dict[str, Any]]]:
    """``{queue: {category: {count, oldest_age_seconds}}}`` for every DLQ of the stack."""
    dlq = lambda_dlq_module()
    out = {}
    for name, (_, dlq_output) in QUEUES.items():
        out[name] = dlq.list_dlq(target.client, target.output(dlq_output), failures_table(target), now=time.time())
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
) -> dict[str, Any]:
    check_replay_request(queue, category, force=force, dry_run=dry_run)
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
    )
    return dict(report.as_dict())


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
                lines.append(f"{queue:<18} {category:<14} {entry['count']:>6} {entry['oldest_age_seconds']:>10} s")
    return "\n".join(lines)
