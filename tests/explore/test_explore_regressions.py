"""Minimal sequences ``make explore`` found on the code of issue 40's start, replayed as plain tests.

Each is the shrunk sequence Hypothesis printed (rule calls on :class:`SagaExploration`), followed by the
check of the invariant it broke. Those whose class of issue 40 is still open are strict xfails naming
what is missing (a fix makes them pass, and strict fails the run until the mark is removed):

- ``lost_sale``: issue 40, "Every valid order cancelled, and every check green" (build point 1);
- ``cache_no_exit``: "Answers that depend on the moment, cached for good" and "No exit" (points 3, 4);
- ``effect_without_record``: "An effect without a record" (point 2);
- ``looked_at_once``: "Looked at once" (point 5): fixed, the provider's webhooks (tests/explore/webhooks.py);
- ``forward_on_compensating``: "Forward steps act on a COMPENSATING order" (point 3).
"""

from __future__ import annotations

from tests.explore.invariants import INVARIANTS, check
from tests.explore.machine import SagaExploration


def _run_out(state: SagaExploration, steps: int) -> None:
    """Up to ``steps`` clean steps of the running execution (fewer once none runs: a fixed code path may end
    sooner than the sequence Hypothesis shrank on the old code)."""
    for _ in range(steps):
        if not state._running():
            return
        state.step_cleanly(index=0)


def broken(state: SagaExploration, invariant: str) -> list[str]:
    """The violations of ``invariant`` alone, now."""
    return check(state.actors, frozenset(INVARIANTS) - {invariant})


def test_explore_regression_lost_sale_a_throttle_outlasting_the_retries_cancels_a_valid_order() -> None:
    state = SagaExploration()
    state.first_order(kind="valid")
    state.step(index=0, fault="outage")  # ReserveInventory throttled past its retries: parked, nothing undone
    state.step_cleanly(index=0)  # MarkNeedsAttention parks and announces it (was: ReleaseInventory, COMPENSATED)
    assert broken(state, "lost_sale") == []
    assert broken(state, "announced") == []


def test_explore_regression_cache_no_exit_a_stale_answer_cached_leaves_the_repair_no_exit() -> None:
    state = SagaExploration()
    state.first_order(kind="valid")
    state.step_cleanly(index=0)  # ReserveInventory
    state.step_cleanly(index=0)  # ChargePayment
    state.step(index=0, fault="outage")  # ShipOrder -> CancelShipment
    state.time_out(index=0)  # the execution times out before its compensations
    state.clock_jump(seconds=7200)
    state.sweep()  # parks the order (stuck, no execution running)
    state.redrive(index=0)  # Step Functions Redrive: the compensations answer "stale", cached
    _run_out(state, 4)
    state.repair(index=0, action="compensate")  # ops repair: replays the cached no-ops
    _run_out(state, 5)
    assert broken(state, "announced") == []


def test_explore_regression_effect_without_record_a_forgotten_partial_capture_is_never_refunded() -> None:
    state = SagaExploration()
    state.first_order(kind="partial")
    state.step_cleanly(index=0)  # ReserveInventory
    state.step_cleanly(index=0)  # ChargePayment: partly captured (PaymentIncomplete) -> RefundPayment
    state.time_out(index=0)  # the execution times out before its refund
    state.clock_jump(seconds=86400)  # the provider forgets the charge's key (24 h); nothing recorded it
    state.redrive(index=0)
    state.step_cleanly(index=0)  # RefundPayment: no charge found, no record of one: "nothing to refund"
    state.step_cleanly(index=0)  # ReleaseInventory: COMPENSATED, the partial capture kept
    assert broken(state, "money") == []


def test_explore_regression_looked_at_once_a_refund_failing_days_later_is_never_seen() -> None:
    # Found by the exploration (a partly captured order, run_to_end, late_refund_failure, days later); by hand:
    state = SagaExploration()
    state.first_order(kind="undeliverable")
    for _ in range(5):  # reserve, charge, ship (rejected), refund, release: COMPENSATED
        state.step_cleanly(index=0)
    state.sweep()  # reconciliation checks the attempt once, within its window: all refunded
    state.clock_jump(seconds=259200)
    state.late_refund_failure(index=0)  # the refund fails three days later: the money is captured again
    state.clock_jump(seconds=86400)  # the provider's events arrive, newest first: refund.failed, then the older success
    state.sweep()
    assert broken(state, "settled") == []
    assert state.webhooks.answers == ["parked", "older"]


def test_explore_regression_forward_on_compensating_a_redriven_charge_lands_on_a_compensating_order() -> None:
    # Found by the exploration itself (make test's budget); shrunk by hand to the rules that matter.
    state = SagaExploration()
    state.first_order(kind="valid")
    state.step_cleanly(index=0)  # ReserveInventory
    state.time_out(index=0)  # the execution times out before ChargePayment
    state.repair(index=0, action="compensate")  # ops repair: nothing runs for the order
    state.step_cleanly(index=0)  # the repair's ReserveInventory: CompensationRequested
    state.step_cleanly(index=0)  # its CancelShipment: the order is COMPENSATING
    state.redrive(index=0)  # someone redrives the timed-out execution
    state.step_cleanly(index=0)  # its ChargePayment charges the COMPENSATING order
    assert broken(state, "forward_on_compensating") == []


def test_explore_regression_redrive_after_park_succeeds_and_leaves_the_order_parked() -> None:
    """``make explore`` (300 x 50, seed fixed) on the merged fixes found it in a 40-rule sequence, shrunk by hand:
    a declined order's execution times out, the sweeper parks the order days later, someone redrives the
    execution; its compensations answer "stale" on the parked order (no operator asked) and it ends SUCCEEDED:
    a success that leaves a parked order."""
    state = SagaExploration()
    state.first_order(kind="declined")
    state.step(fault="none", index=0)  # ReserveInventory
    state.time_out(index=0)  # the execution times out
    state.clock_jump(seconds=259200)
    state.sweep()  # parks the order (stuck, no execution running) and announces it
    state.redrive(index=0)  # Step Functions Redrive of the timed-out execution
    state.run_to_end(index=0)  # its compensations answer "stale": SUCCEEDED, the order still parked
    assert broken(state, "announced") == []


def test_explore_regression_late_refund_failure_of_a_replaced_attempt_is_settled_not_money() -> None:
    """``make explore EXPLORE_SKIP=lost_sale,settled`` (300 x 50) found it in a 45-rule sequence, shrunk by hand:
    a refund that fails days later is a provider's late change (the ``settled`` invariant's, issue 40 point 5)
    for the attempt it hit, also once a new payment attempt replaced that attempt; ``money`` flagged the
    replaced attempt instead (the exploration's bookkeeping, not the product)."""
    state = SagaExploration()
    state.first_order(kind="undeliverable")
    _run_out(state, 5)  # reserve, charge, ship (rejected), refund, release: COMPENSATED
    state.clock_jump(seconds=259200)
    state.late_refund_failure(index=0)  # attempt 1's refund fails three days later
    state.new_attempt(index=0)  # the customer pays again: attempt 2 replaces attempt 1
    assert broken(state, "money") == []


#: make test's budget on merged main: the falsifying sequence Hypothesis printed (rule, arguments).
LATE_PARK_AFTER_A_REPAIR: tuple[tuple[str, dict[str, object]], ...] = (
    ("first_order", {"kind": "partial"}),
    ("repair", {"action": "redrive", "index": 4}),
    ("repair", {"action": "redrive", "index": 5}),
    ("clock_jump", {"seconds": 7200}),
    ("repair", {"action": "compensate", "index": 3}),
    ("clock_jump", {"seconds": 30}),
    ("late_refund_failure", {"index": 5}),
    ("step_cleanly", {"index": 7}),
    ("repair", {"action": "compensate", "index": 7}),
    ("repair", {"action": "compensate", "index": 3}),
    ("sweep", {}),
    ("late_refund_failure", {"index": 0}),
    ("repair", {"action": "compensate", "index": 2}),
    ("clock_jump", {"seconds": 1382400}),
    ("sweep", {}),
    ("step", {"fault": "outage", "index": 7}),
    ("late_refund_failure", {"index": 2}),
    ("repair", {"action": "redrive", "index": 7}),
    ("sweep", {}),
    ("late_refund_failure", {"index": 4}),
    ("sweep", {}),
    ("repair", {"action": "redrive", "index": 7}),
    ("sweep", {}),
    ("late_refund_failure", {"index": 7}),
    ("repair", {"action": "compensate", "index": 7}),
    ("step", {"fault": "crash_before_effect", "index": 4}),  # MarkNeedsAttention: parked (the ChargePayment throttle)
    ("clock_jump", {"seconds": 259200}),
    ("repair", {"action": "redrive", "index": 3}),  # the repair's execution: charge (partly), refund, release
    ("step_cleanly", {"index": 6}),
    ("step_cleanly", {"index": 6}),
    ("step_cleanly", {"index": 5}),
    ("sweep", {}),
    ("repair", {"action": "redrive", "index": 2}),
    ("clock_jump", {"seconds": 7200}),
    ("step", {"fault": "answer_lost", "index": 4}),  # ReleaseInventory records COMPENSATED, its answer lost
    ("late_refund_failure", {"index": 6}),  # the refund fails at the provider (its webhooks queued)
    ("sweep", {}),
    ("step_cleanly", {"index": 2}),  # the retry: the execution ends SUCCEEDED, the order COMPENSATED
    ("sweep", {}),
    ("clock_jump", {"seconds": 1382400}),  # the webhooks arrive: refund.failed parks the COMPENSATED order
)


def test_explore_regression_a_late_refund_failure_parks_an_order_whose_repair_had_succeeded() -> None:
    """make test's budget (50 x 50, derandomized, not shrunk) on merged main: the sequence Hypothesis printed.
    A partly captured order is parked, redriven by ``ops repair``; the repair's compensations refund it, its
    ReleaseInventory records COMPENSATED and the execution ends SUCCEEDED (a retry after a lost answer). Days
    later the refund fails at the provider: its webhook parks the COMPENSATED order (announced). The execution
    closed SUCCEEDED on a COMPENSATED order; the park came after it closed (a closed execution's status never
    changes: only FAILED, TIMED_OUT or ABORTED ones can be redriven). ``announced`` judged the closed execution
    by the order's status now, not by the status it left."""
    state = SagaExploration()
    for rule, arguments in LATE_PARK_AFTER_A_REPAIR:
        getattr(state, rule)(**arguments)
    assert state.actors.orders["o1"].late_events
    repair = state.actors.executions["order-o1-attempt-1-repair-0"]
    assert (repair.status, repair.left) == ("SUCCEEDED", ("COMPENSATED", 1))  # what it left when it closed
    assert broken(state, "announced") == []
    assert check(state.actors) == []


def test_explore_regression_a_settlement_park_before_the_last_steps_retry_ends_it_already_parked() -> None:
    """The same race with the webhook first, by hand: ReleaseInventory recorded COMPENSATED and its answer was
    lost; the refund fails at the provider and its webhook parks the order before Step Functions retries the
    step. The retry's COMPENSATED write found NEEDS_ATTENTION (``EffectDoneOutcomeNotWritten``), MarkCompensated's
    condition failed and ``OutcomeAlreadyRecorded`` ended the execution SUCCEEDED on a parked order. Now the
    outcome write that finds the order parked refuses by name: FAILED in ``AlreadyParked`` (decision 0029)."""
    state = SagaExploration()
    state.first_order(kind="partial")
    _run_out(state, 3)  # reserve, charge (partly captured: PaymentIncomplete), refund
    state.step(index=0, fault="answer_lost")  # ReleaseInventory records COMPENSATED, its answer lost
    state.late_refund_failure(index=0)
    state.clock_jump(seconds=30)  # the webhooks: refund.failed parks the COMPENSATED order (announced)
    state.run_to_end(index=0)  # the retry
    (execution,) = state.actors.executions.values()
    assert (execution.status, execution.history[-1]) == ("FAILED", "ReleaseInventory:OrderParked")
    assert broken(state, "announced") == []
    assert check(state.actors) == []
