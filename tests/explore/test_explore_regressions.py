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
