"""A representative slice of the fault matrix (``ops local faults``) in one local deployment.

One cell per class of hole issue 19 names: a forward step whose outcome is unknown, a status write,
a compensation that keeps failing, the park itself, an ambiguous provider outcome, an operator's
stop, a repair, a crash before the completion marker, and errors ``States.ALL`` must not catch.
Each order must end COMPLETED, COMPENSATED, or NEEDS_ATTENTION announced (message + alarm), as
judged from the tables, the sandbox ledger and the needs-attention queue.
"""

from __future__ import annotations

from typing import Any

import pytest

from harness.faults.cells import GOOD_OUTCOMES, render
from harness.matrix.fault_matrix import MatrixOptions, run_matrix
from local_cloud.template import CloudAssembly

pytestmark = pytest.mark.e2e

SLICE = {
    "forward_step": ("ShipOrder|Lambda.Unknown|once", "ChargePayment|Lambda.ServiceException|retries"),
    "status_write": (
        "MarkCompleted|DynamoDB.ValidationException|once",
        "MarkCompensated|DynamoDB.ThrottlingException|forever",
    ),
    "compensation": ("RefundPayment|Lambda.Unknown|forever",),
    "park": ("MarkNeedsAttention|Lambda.ServiceException|forever",),
    "ambiguous": (
        "ShipOrder|ambiguous-ship-read_timeout|forever",
        "ChargePayment|ambiguous-charge-connection_reset|once",
    ),
    "stop": ("ChargePayment|StopExecution|once",),
    "repair": ("repair@stop@ShipOrder|compensate|once", "repair@parked|redrive|once"),
    "crash": ("ChargePayment|crash-before-marker|once",),
    # decision 0024: the effect done, the step's own outcome write failing (or the function dying there)
    "outcome_write": (
        "ShipOrder|outcome-write-crash|forever",
        "ShipOrder|outcome-write-ConditionalCheckFailedException|once",
        "ReleaseInventory|outcome-write-ThrottlingException|forever",
    ),
    "states_runtime": ("ReserveInventory|States.Runtime|once",),
    # issue 28: actors that run while the execution is live, and time that passes
    "concurrency": (
        "ChargePayment|duplicate-invocation|outlives-retries",
        "ChargePayment|in-flight-409-charge|forever",
        "ChargePayment|sweeper-during-execution|lagging",
        "race@stop@ShipOrder|sweep-inside-repair-compensate|lagging",
    ),
    "time": ("time@record-and-key-expired-before-redrive|redrive|once", "attempt2@compensated|payment-attempt-2|once"),
}  # fmt: skip
WANTED = {key for keys in SLICE.values() for key in keys}


@pytest.fixture(scope="module")
def matrix(assembly: CloudAssembly) -> dict[str, Any]:
    report = run_matrix(
        MatrixOptions(assembly_dir=assembly.outdir, timeout_seconds=600), cells_filter=lambda c: c.key in WANTED
    )
    print(render(report["cells"]))
    return report


def _cells(matrix: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    keys = SLICE[kind]
    cells = [c for c in matrix["cells"] if c["cell"] in keys]
    assert len(cells) == len(keys), f"the deployed state machine lacks a cell of {keys}"
    return cells


def _bad(cells: list[dict[str, Any]]) -> list[str]:
    return [
        f"{c['row']} {c['fault']}/{c['persistence']}: {c['problems']}"
        for c in cells
        if c["outcome"] not in GOOD_OUTCOMES
    ]


def test_fault_matrix_slice_really_injected_each_kind(matrix: dict[str, Any]) -> None:
    injected = matrix["faults_injected"]
    for kind in ("error:Lambda.Unknown", "error:DynamoDB.ValidationException", "stop:stop", "crash:Sandbox.Timedout"):
        assert injected.get(kind, 0) > 0, kind
    assert injected.get("ambiguous:read_timeout", 0) > 1 and injected.get("ambiguous:connection_reset") == 1
    assert injected.get("error:Lambda.ServiceException", 0) >= 3  # retries: every retry but the last fails
    for kind in ("duplicate:duplicate", "inflight:409", "race:sweep"):
        assert injected.get(kind, 0) == 1, kind


def test_fault_matrix_slice_the_concurrent_actors_really_interleaved(matrix: dict[str, Any]) -> None:
    """Each actor ran while the other was suspended mid-way, not after it (issue 28)."""
    notes = {c["cell"]: " / ".join(c.get("races") or []) for c in matrix["cells"]}
    assert "held at its IN_PROGRESS record" in notes["ChargePayment|duplicate-invocation|outlives-retries"]
    assert "409 in flight for charge" in notes["ChargePayment|in-flight-409-charge|forever"]
    assert "swept inside ChargePayment (lagging)" in notes["ChargePayment|sweeper-during-execution|lagging"]
    assert "an idempotency record expired" in notes["time@record-and-key-expired-before-redrive|redrive|once"]


@pytest.mark.parametrize("kind", list(SLICE))
def test_fault_matrix_slice_every_order_ends_accounted_for(matrix: dict[str, Any], kind: str) -> None:
    assert _bad(_cells(matrix, kind)) == []
