"""``ops dlq list`` / ``ops dlq replay``: DLQs by category, replay with a dry run."""

from __future__ import annotations

import time
from typing import Any

from ops.lambda_packages import ensure_importable
from ops.target import Target, TargetError

#: --queue name -> (source queue output, DLQ output)
QUEUES = {
    "orders": ("OrdersQueueUrl", "OrdersDlqUrl"),
    "needs-attention": ("NeedsAttentionQueueUrl", "NeedsAttentionDlqUrl"),
}


def lambda_dlq_module() -> Any:
    """The DLQ library lives with the Lambda code (the replay Lambda uses it too)."""
    ensure_importable()
    import shared.dlq

    return shared.dlq


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
    if queue not in QUEUES:
        raise TargetError(f"unknown queue {queue!r}; choose from {sorted(QUEUES)}")
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
    lines = [f"{'queue':<18} {'category':<14} {'count':>6} {'oldest age':>12}"]
    for queue, categories in summary.items():
        if not categories:
            lines.append(f"{queue:<18} {'(empty)':<14} {0:>6} {'-':>12}")
        for category, entry in sorted(categories.items()):
            lines.append(f"{queue:<18} {category:<14} {entry['count']:>6} {entry['oldest_age_seconds']:>10} s")
    return "\n".join(lines)
