"""Billed state transitions per saga path, from the execution histories of ``make bench``'s business-mix run.

``python -m tools.transitions_by_path`` runs ``ops local run`` with the bench's mix and seed (100 orders,
``tools.bench.BUSINESS_MIX``) and prints, for each sequence of states entered, how many executions took it
and what each cost as Step Functions bills it (every state entered plus every retry:
``local_cloud.histories.billed_transitions_per_execution``). The mean is the bench's
``state_transitions_per_order_mix``. docs/results.md's transitions per outcome path (``make bench``) come from it.
"""

from __future__ import annotations

import collections
import json
import sys
from typing import Any

import harness.reporting.reporter as reporter
from tools.bench import BUSINESS_MIX, PIPELINE_ORDERS

#: (execution ARN, its history events), as the local run's reporter receives them.
History = tuple[str, list[dict[str, Any]]]
#: The count the bill uses (local_cloud.histories, through the reporter: tools import nothing of the emulator).
billed_transitions_per_execution = reporter.billed_transitions_per_execution


def by_path(histories: list[History]) -> dict[str, dict[str, float]]:
    """``{"A > B > C": {"executions": n, "billed_transitions": t}}``, most taken first (``t``: the mean)."""
    paths: dict[str, list[float]] = collections.defaultdict(list)
    for arn, events in histories:
        entered = [e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e]
        paths[" > ".join(entered)].append(billed_transitions_per_execution([(arn, events)]))
    ranked = sorted(paths.items(), key=lambda kv: -len(kv[1]))
    return {p: {"executions": len(v), "billed_transitions": sum(v) / len(v)} for p, v in ranked}


def main() -> int:
    from harness.cli import main as workshop_main

    seen: list[History] = []
    original = reporter.billed_transitions_per_execution

    def keep(histories: list[History], sample: int = 100) -> float:
        seen.extend(histories[:sample])
        return original(histories, sample)

    reporter.billed_transitions_per_execution = keep
    argv = ["local", "run", "--orders", str(PIPELINE_ORDERS), "--seed", "13", *BUSINESS_MIX]
    try:
        workshop_main(argv)
    finally:
        reporter.billed_transitions_per_execution = original
    paths: dict[str, Any] = by_path(seen)
    mean = sum(billed_transitions_per_execution([h]) for h in seen) / max(1, len(seen))
    print(json.dumps({"executions": len(seen), "mean": round(mean, 2), "paths": paths}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
