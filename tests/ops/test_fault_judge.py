"""Issue 28: the fault matrix reads money and parcel per payment attempt, for parked orders too."""

from __future__ import annotations

from typing import Any

from harness.faults.judge import classify, facts_from_records


def _op(action: str, status: str, attempt: int, extra: str = "") -> dict[str, Any]:
    op = {"charge": "charge-payment", "refund": "refund-payment", "ship": "ship-order"}[action]
    return {"sk": "op", "order_id": "o-1", "action": action, "status": status,
            "idempotency_key": f"o-1#{op}#attempt-{attempt}{extra}"}  # fmt: skip


def _reservation(attempt: int, status: str) -> dict[str, Any]:
    return {"pk": f"reservation#o-1#attempt-{attempt}", "order_id": "o-1", "status": status}


def _judge(status: str, attempt: int, ledger: list[dict[str, Any]], inventory: list[dict[str, Any]],
           announced: bool = False) -> tuple[str, list[str]]:  # fmt: skip
    statuses = {"o-1": {"status": status, "payment_attempt": attempt}}
    facts = facts_from_records(["o-1"], statuses, ledger, inventory)["o-1"]
    facts.attention_messages, facts.attention_alarm = int(announced), announced
    return classify(facts)


def test_fault_judge_attempt_2_after_a_refunded_attempt_1_is_completed_not_a_double_charge() -> None:
    ledger = [_op("charge", "captured", 1), _op("refund", "refunded", 1),
              _op("charge", "captured", 2), _op("ship", "shipped", 2)]  # fmt: skip
    inventory = [_reservation(1, "RELEASED"), _reservation(2, "RESERVED")]
    assert _judge("COMPLETED", 2, ledger, inventory) == ("COMPLETED", [])


def test_fault_judge_attempt_2_with_attempt_1_money_still_out_is_a_violation() -> None:
    ledger = [_op("charge", "captured", 1), _op("charge", "captured", 2), _op("ship", "shipped", 2)]
    outcome, _ = _judge("COMPLETED", 2, ledger, [_reservation(2, "RESERVED")])
    assert outcome == "VIOLATION"


def test_fault_judge_a_parked_order_holding_an_earlier_attempts_money_is_not_known() -> None:
    """The operator's repair acts on the current attempt: attempt 1's capture would be out of reach."""
    ledger = [_op("charge", "captured", 1)]
    outcome, problems = _judge("NEEDS_ATTENTION", 2, ledger, [_reservation(2, "RESERVED")], announced=True)
    assert outcome == "VIOLATION" and any("attempt 1 (not the current 2)" in p for p in problems)


def test_fault_judge_a_parked_order_with_stock_released_for_a_live_parcel_is_a_violation() -> None:
    ledger = [_op("charge", "captured", 1), _op("ship", "shipped", 1)]
    outcome, problems = _judge("NEEDS_ATTENTION", 1, ledger, [_reservation(1, "RELEASED")], announced=True)
    assert outcome == "VIOLATION" and "stock released with a live shipment" in problems


def test_fault_judge_a_parked_order_whose_current_attempt_holds_money_is_known_and_announced() -> None:
    ledger = [_op("charge", "captured", 1), _op("ship", "shipped", 1)]
    assert _judge("NEEDS_ATTENTION", 1, ledger, [_reservation(1, "RESERVED")], announced=True)[0] == "NEEDS_ATTENTION"
    assert _judge("NEEDS_ATTENTION", 1, ledger, [_reservation(1, "RESERVED")])[0] == "VIOLATION"


def test_fault_judge_a_second_capture_after_the_key_window_is_a_double_charge() -> None:
    ledger = [_op("charge", "captured", 1), _op("charge", "captured", 1, "#after-window-1"),
              _op("ship", "shipped", 1)]  # fmt: skip
    outcome, problems = _judge("COMPLETED", 1, ledger, [_reservation(1, "RESERVED")])
    assert outcome == "VIOLATION" and "2 captures" in problems
