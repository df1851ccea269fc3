"""The exploration at ``make test``'s budget (``make explore`` runs the large one): a fixed seed, about a
thousand rule steps, every invariant that holds on today's code checked after every rule.

:data:`BROKEN_TODAY` lists the invariants today's code breaks (``make explore`` found them by itself;
their minimal sequences are replayed in test_explore_regressions.py, strict xfails until their fix lands).
Once the rest of issue 40 has landed, empty it: the whole set then runs here.
"""

from __future__ import annotations

import pytest
from hypothesis.stateful import run_state_machine_as_test

from tests.explore.invariants import INVARIANTS
from tests.explore.machine import Counters, SagaExploration
from tests.explore.run import budget

#: Invariants left out here until their fixes land (see the module doc and docs/design.md, "make explore"):
#: money, announced and forward_on_compensating hold since intent before effect (0028) and the operator's
#: exits (0029), lost_sale since a throttle past every retry parks the order (0005), settled since a provider's
#: late change is followed (issue 40, point 5: its webhooks park the order). None is left out.
BROKEN_TODAY: frozenset[str] = frozenset()
#: make test's budget: sequences x rules each (at least 1,000 rule steps, under a minute on 2 cores).
#: 50 sequences since the provider's webhooks are delivered (tests/explore/webhooks.py): the derandomized sequences
#: are shorter (30 gave 722 rule steps; 50 give 1,950 in about 35 s on 2 cores).
EXAMPLES, STEPS = 50, 50
MIN_STEPS = 1000


def test_explore_holds_the_invariants_at_make_tests_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    assert set(INVARIANTS) >= BROKEN_TODAY
    monkeypatch.setenv("EXPLORE_SKIP", ",".join(sorted(BROKEN_TODAY)))
    Counters.steps = Counters.examples = 0
    run_state_machine_as_test(SagaExploration, settings=budget(EXAMPLES, STEPS, shrink=False))
    print(f"explored: {Counters.steps} rule steps in {Counters.examples} sequences; violations: 0")
    assert Counters.steps >= MIN_STEPS
