"""Issue 28: the fault matrix's concurrency and time cells, generated from the definition."""

from __future__ import annotations

from harness.matrix.actors import next_attempt
from harness.matrix.races import all_cells
from harness.workload.orders import PII_PATTERN

from .test_fault_cells import saga


def test_race_cells_cover_each_actor_at_each_lambda_state() -> None:
    keys = {c.key for c in all_cells(saga())}
    for state in ("Reserve", "ChargePayment", "RefundPayment"):
        assert {f"{state}|sweeper-during-execution|listed", f"{state}|sweeper-during-execution|lagging",
                f"{state}|duplicate-invocation|first-answer", f"{state}|duplicate-invocation|outlives-retries",
                f"{state}|dlq-replay-during-saga|once"} <= keys  # fmt: skip
    assert "MarkCompleted|sweeper-during-execution|listed" not in keys  # a DynamoDB task: no Lambda step
    assert {
        "RefundPayment|attempt-2-during-compensation|once",
        "ChargePayment|in-flight-409-charge|once",
        "ChargePayment|in-flight-409-charge|forever",
        "RefundPayment|in-flight-409-refund|forever",
    } <= keys


def test_race_cells_send_attempt_2_after_each_terminal_outcome_and_race_the_sweeper() -> None:
    cells = {c.key: c for c in all_cells(saga())}
    for setup in ("completed", "parked", "declined"):
        assert cells[f"attempt2@{setup}|payment-attempt-2|once"].after_drain == "attempt2"
    race = cells["race@stop@ChargePayment|sweep-inside-repair-compensate|lagging"]
    assert race.repair == "compensate" and race.race == "sweep-inside-repair"
    assert all(r.first_execution_only for r in race.rules)


def test_race_cells_the_attempt_2_during_compensation_meets_no_fault_of_attempt_1() -> None:
    cell = next(c for c in all_cells(saga()) if c.key == "RefundPayment|attempt-2-during-compensation|once")
    assert all(r.first_execution_only for r in cell.rules)


def test_next_attempt_changes_only_the_attempt_and_the_token() -> None:
    order = {"order_id": "o-1", "payment_attempt": 1, "payment_token": "tok_ok_0123456789ab", "items": []}
    second = next_attempt(order)
    assert second["payment_attempt"] == 2 and second["items"] == [] and second["order_id"] == "o-1"
    assert second["payment_token"] != order["payment_token"] and PII_PATTERN.fullmatch(second["payment_token"])
