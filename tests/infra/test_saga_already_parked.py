"""Every function task of the order saga ends the execution at once on a parked order nobody asked it to act
on (decision 0029, amended: a Step Functions Redrive is not a repair)."""

from __future__ import annotations

from typing import Any

FORWARD = ("ReserveInventory", "ChargePayment", "ShipOrder")
COMPENSATIONS = ("CancelShipment", "RefundPayment", "ReleaseInventory", "ReleaseInventoryThenPark")


def test_saga_already_parked_ends_the_execution_from_every_function_task(saga_definition: dict[str, Any]) -> None:
    """A Redrive of an execution whose order was parked meanwhile (decision 0029, amended): every step refuses
    by name (``OrderParked``) and the execution fails at once, never retried, never compensated, never parked
    again (the park would announce the order a second time); never SUCCEEDED with the order still parked."""
    states = saga_definition["States"]
    for name in (*FORWARD, *COMPENSATIONS):
        catch = states[name]["Catch"][0]
        assert (catch["ErrorEquals"], catch["Next"]) == (["OrderParked"], "AlreadyParked"), name
        assert catch["ResultPath"] in ("$.error", "$.compensation_error", "$.release_error"), name
    for name in COMPENSATIONS:  # they retry any error: this one never
        assert any(r["ErrorEquals"][-1:] == ["OrderParked"] and r["MaxAttempts"] == 0 for r in states[name]["Retry"])
    for name in FORWARD:
        assert all("OrderParked" not in r["ErrorEquals"] for r in states[name]["Retry"]), name
    assert "OrderParked" not in str(states["MarkNeedsAttention"]), "the park is not a step that meets the order"
    fail = states["AlreadyParked"]
    assert (fail["Type"], fail["Error"]) == ("Fail", "AlreadyParked")
    assert "ops repair" in fail["Cause"] and "ops resolve" in fail["Cause"]
