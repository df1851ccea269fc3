"""``make explore``: the exploration with a fixed seed and a budget; prints rule steps and violations.

``python -m tests.explore.run --examples 100 --steps 120`` runs ``examples`` sequences of up to ``steps``
rules each (Hypothesis' ``max_examples`` and ``stateful_step_count``), derandomized: the same run each
time. Exit 1 on a violation (Hypothesis prints the minimal sequence that shows it).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from hypothesis import HealthCheck, Phase, settings
from hypothesis.internal.conjecture import engine
from hypothesis.stateful import run_state_machine_as_test


def budget(examples: int, steps: int, *, shrink: bool = True) -> settings:
    phases = [Phase.explicit, Phase.reuse, Phase.generate] + ([Phase.shrink] if shrink else [])
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        derandomize=True,
        database=None,
        deadline=None,
        phases=phases,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--examples", type=int, default=100)
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--skip", default=os.environ.get("EXPLORE_SKIP", ""), help="invariants left out")
    args = parser.parse_args(argv)
    os.environ["EXPLORE_SKIP"] = args.skip
    from tests.explore.machine import Counters, SagaExploration

    # Shrinking a long sequence on a loaded machine can take Hypothesis' whole 5 minutes: 2 suffice here.
    engine.MAX_SHRINKING_SECONDS = 120
    Counters.progress_every = 25
    started = time.monotonic()
    violations = 0
    try:
        run_state_machine_as_test(SagaExploration, settings=budget(args.examples, args.steps))
    except AssertionError as exc:
        violations = 1
        # Hypothesis attaches the minimal sequence to the exception (its notes), as Python code to replay.
        print("\n".join(getattr(exc, "__notes__", [])))
        print(f"violation: {exc}")
    elapsed = time.monotonic() - started
    print(
        f"explored: {Counters.steps} rule steps in {Counters.examples} sequences, {elapsed:.0f} s; "
        f"violations: {violations}; invariants left out: {args.skip or 'none'}"
    )
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
