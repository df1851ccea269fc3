"""The chaos run's low-rate saga faults (``ops local run --status-write-fail-rate`` and the others), drawn
per attempt and injected through the fault matrix's hooks (:mod:`harness.faults.inject`)."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from harness.faults.cells import DYNAMODB_FAULTS, OUTCOME_WRITE_FAULTS, Rule, task_states
from harness.faults.inject import FaultPlan
from local_cloud.faults import FaultCounter


class RandomFaults(FaultPlan):
    """The chaos run's low-rate faults in the same emulator hooks, rolled per attempt instead of planned.

    ``status_write``: a status write (a direct DynamoDB integration) fails with a DynamoDB error
    AWS documents, chosen at random, and so does a step's own outcome write (decision 0024), or the
    function dies between its effect and that write; ``park``: the park (a state whose name holds ``NeedsAttention``)
    fails with ``Lambda.Unknown`` after it acted, or ``Lambda.ServiceException`` before; ``stop``:
    StopExecution in the state being entered; ``ambiguous``: a provider's answer is lost after it acted.
    """

    def __init__(
        self, definition: Mapping[str, Any], rates: Mapping[str, float], seed: int, counter: FaultCounter
    ) -> None:
        super().__init__(counter=counter)
        states = task_states(definition)
        self.status_writes = {n for n, s in states.items() if s.integration == "dynamodb"}
        self.parks = {n for n in states if "NeedsAttention" in n}
        self.rates = dict(rates)
        self._dynamodb_errors = DYNAMODB_FAULTS
        self._outcome_write_errors = OUTCOME_WRITE_FAULTS
        self._seed = seed
        self._consulted: dict[tuple[str, str, str], int] = {}

    def applies(self, order_id: str | None) -> bool:
        return order_id is not None

    def _draw(self, order_id: str, state: str, kinds: tuple[str, ...]) -> random.Random:
        """The generator of this consultation: seeded by the run's seed, the order, the state, the kinds
        asked and how many times they were asked before, so which attempt fails does not depend on the
        order the executions' threads arrive in."""
        key = (order_id, state, ",".join(kinds))
        with self._lock:
            attempt = self._consulted[key] = self._consulted.get(key, 0) + 1
        return random.Random(f"{self._seed}|{order_id}|{state}|{key[2]}|{attempt}")

    def fire(self, order_id: str, state: str | None, kinds: tuple[str, ...], action: str = "") -> Rule | None:
        if state is None:
            return None
        draw = self._draw(order_id, state, kinds)

        def roll(rate_name: str) -> bool:
            rate = self.rates.get(rate_name, 0.0)
            return rate > 0 and draw.random() < rate

        rule: Rule | None = None
        if "error" in kinds and state in self.status_writes and roll("status_write"):
            rule, kind = Rule(state, "error", draw.choice(self._dynamodb_errors)), "status_write_error"
        elif "outcome_write" in kinds and roll("status_write"):
            # a step's own outcome write (decision 0024): DynamoDB's answer, or the function dies
            rule, kind = Rule(state, "outcome_write", draw.choice(self._outcome_write_errors)), "status_write_error"
        elif "error" in kinds and state in self.parks and roll("park"):
            after = draw.random() < 0.5
            rule = Rule(
                state,
                "error",
                "Lambda.Unknown" if after else "Lambda.ServiceException",
                timing="after" if after else "before",
            )
            kind = "park_failure"
        elif "stop" in kinds and roll("stop"):
            rule, kind = Rule(state, "stop"), "stop"
        elif "ambiguous" in kinds and roll("ambiguous"):
            transport = draw.choice(("read_timeout", "connection_reset"))
            rule, kind = Rule(state, "ambiguous", transport, action=action), f"ambiguous_{transport}"
        if rule is not None:
            self.counter.add(kind)
        return rule
