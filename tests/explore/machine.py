"""The exploration: a Hypothesis rule-based state machine whose rules are the actors (actors.Actors) and
whose invariants (invariants.INVARIANTS) are checked after every rule.

``EXPLORE_SKIP`` (comma-separated invariant names) leaves invariants out: ``make test``'s budget runs
without those that today's code breaks (tests/explore/test_explore.py says which, and why).
"""

from __future__ import annotations

import os
from typing import ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from tests.explore.actors import FAULTS, KINDS, Actors
from tests.explore.invariants import check
from tests.explore.saga_model import Execution
from tests.explore.webhooks import ProviderWebhooks
from tests.explore.world import world

#: Clock jumps: seconds (a retry), minutes, the sweeper's threshold, a day (provider keys), days (TTL).
JUMPS = (1, 30, 300, 900, 7200, 86_400, 3 * 86_400, 16 * 86_400)
MAX_ORDERS = 3
#: More Tasks than any route of the definition runs (forward, compensations, a Mark, the park).
MAX_TASKS = 12
INDEX = st.integers(min_value=0, max_value=7)


def skipped() -> frozenset[str]:
    return frozenset(name for name in os.environ.get("EXPLORE_SKIP", "").split(",") if name)


class Counters:
    """Rule steps and violations, over every example of a run (the figures ``make explore`` prints)."""

    steps: ClassVar[int] = 0
    examples: ClassVar[int] = 0
    #: Print the running figures every this many sequences (0: never; ``make explore`` sets it: a long run
    #: on a shared machine says how far it got).
    progress_every: ClassVar[int] = 0


class SagaExploration(RuleBasedStateMachine):
    """Every actor as a rule; the invariants after each (module doc)."""

    def __init__(self) -> None:
        super().__init__()
        self.actors = Actors(world())
        self.webhooks = ProviderWebhooks()
        self.skip = skipped()
        Counters.examples += 1
        if Counters.progress_every and Counters.examples % Counters.progress_every == 0:
            print(f"progress: {Counters.steps} rule steps in {Counters.examples - 1} sequences", flush=True)

    @initialize(kind=st.sampled_from(sorted(KINDS)))
    def first_order(self, kind: str) -> None:
        self.actors.place(kind)

    def _running(self) -> list[Execution]:
        return [e for e in self.actors.executions.values() if e.running]

    def _order(self, index: int) -> str:
        ids = sorted(self.actors.orders)
        return ids[index % len(ids)]

    @rule(kind=st.sampled_from(sorted(KINDS)))
    @precondition(lambda self: len(self.actors.orders) < MAX_ORDERS)
    def place(self, kind: str) -> None:
        Counters.steps += 1
        self.actors.place(kind)

    @rule(index=INDEX, fault=st.sampled_from(FAULTS))
    @precondition(lambda self: bool(self._running()))
    def step(self, index: int, fault: str) -> None:
        Counters.steps += 1
        running = self._running()
        self.actors.step(running[index % len(running)], fault)

    @rule(index=INDEX)
    @precondition(lambda self: bool(self._running()))
    def step_cleanly(self, index: int) -> None:
        Counters.steps += 1
        running = self._running()
        self.actors.step(running[index % len(running)], "none")

    @rule(index=INDEX)
    @precondition(lambda self: bool(self._running()))
    def run_to_end(self, index: int) -> None:
        """One execution runs on without a fault until it ends (one rule, several Tasks): deep sequences
        (a repair after a redrive after a park) become short enough for the search to reach."""
        Counters.steps += 1
        running = self._running()
        execution = running[index % len(running)]
        for _ in range(MAX_TASKS):
            if not execution.running:
                return
            self.actors.step(execution, "none")

    @rule(index=INDEX)
    def redeliver(self, index: int) -> None:
        Counters.steps += 1
        self.actors.redeliver(self._order(index))

    @rule(index=INDEX)
    def new_attempt(self, index: int) -> None:
        Counters.steps += 1
        self.actors.new_attempt(self._order(index))

    @rule()
    def sweep(self) -> None:
        Counters.steps += 1
        self.actors.sweep()

    @rule(index=INDEX, action=st.sampled_from(("compensate", "redrive")))
    def repair(self, index: int, action: str) -> None:
        Counters.steps += 1
        self.actors.repair(self._order(index), action)

    @rule(index=INDEX)
    @precondition(lambda self: bool(self._running()))
    def time_out(self, index: int) -> None:
        Counters.steps += 1
        running = self._running()
        self.actors.time_out(running[index % len(running)])

    @rule(index=INDEX)
    @precondition(lambda self: any(e.status == "TIMED_OUT" for e in self.actors.executions.values()))
    def redrive(self, index: int) -> None:
        Counters.steps += 1
        closed = [e for e in self.actors.executions.values() if e.status == "TIMED_OUT"]
        self.actors.redrive(closed[index % len(closed)])

    @rule(seconds=st.sampled_from(JUMPS))
    def clock_jump(self, seconds: int) -> None:
        Counters.steps += 1
        self.actors.advance(seconds)
        self.actors.providers_forget()
        self.actors.records_expire()
        self.webhooks.deliver()  # the provider's events, late, out of order and twice (tests/explore/webhooks.py)

    @rule(index=INDEX)
    def late_refund_failure(self, index: int) -> None:
        Counters.steps += 1
        order_id = self._order(index)
        if self.actors.late_refund_failure(order_id):
            self.webhooks.refund_failed_later(order_id, self.actors.orders[order_id].attempt)

    @invariant()
    def holds(self) -> None:
        violations = check(self.actors, self.skip)
        assert not violations, "\n".join(violations)
