"""The fault matrix's steps between its phases for the concurrency and time cells (issue 28):
the actors' means on the run, what happens once the first executions ended (payment attempt 2, a
provider's key window passing, our idempotency records expiring), and a repair racing the sweeper.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from unittest import mock

from harness.faults.cells import Cell
from harness.matrix.actors import Actors, next_attempt
from local_cloud.clients import aws
from sandbox.http_server import forget_keys

if TYPE_CHECKING:
    from harness.stack.pipeline import PipelineRun


def age_order(run: PipelineRun, order_id: str, seconds: float) -> None:
    """Move the order's ``updated_at`` back by ``seconds``: its last write was that long ago (the
    sweeper's stuck query reads it), as for an order stopped long before an operator's repair."""
    from order_domain import clock

    aws("dynamodb").update_item(
        TableName=run.orders_table,
        Key={"order_id": {"S": order_id}},
        UpdateExpression="SET updated_at = :old",
        ConditionExpression="attribute_exists(order_id)",
        ExpressionAttributeValues={":old": {"S": clock.iso(run.clock.now() - seconds)}},
    )


def race_actors(run: PipelineRun, age_seconds: float) -> Actors:
    """The actors' means on this run: the sweeper, aging an order past the threshold, sending an order."""
    return Actors(
        sweep=run.sweep,
        age=lambda order_id: age_order(run, order_id, age_seconds),
        send=lambda order, cid: run.submit([(order, cid)]),
    )


def after_drain(run: PipelineRun, actors: Actors, by_order: dict[str, Cell]) -> None:
    """Each cell's ``after_drain``: payment attempt 2 sent; the provider's keys for the order forgotten
    (their window passed); our idempotency records for it expired; or both."""
    del run
    for order_id, cell in by_order.items():
        what = cell.after_drain
        if what == "attempt2":
            order, cid = actors.orders[order_id]
            actors.orders[order_id] = (next_attempt(order), cid)
            actors.send(*actors.orders[order_id])
            actors.note(order_id, "payment attempt 2 sent")
        if what in ("forget-keys", "expire-both"):
            forgotten = forget_keys(f"{order_id}#")
            actors.note(order_id, f"the providers forgot {forgotten} keys")
        if what in ("expire-records", "expire-both"):
            with actors.lock:
                actors.expired.add(order_id)


def race_repair(run: PipelineRun, actors: Actors, cell: Cell, order_id: str) -> dict[str, Any]:
    """``ops repair`` and the sweeper on the same aged order, each run inside the other at its
    check-then-act gap, the order's executions not yet in ListExecutions."""
    from ops.repair import repair

    target = run.target()
    actors.age(order_id)
    answer: dict[str, Any] = {}
    with actors.lock:
        actors.hidden.add(order_id)

    def operator() -> None:
        """The operator's command on its own thread: its own process and credentials, not the sweeper's."""
        answer.update(_in_thread(lambda: repair(target, order_id, cell.repair)))  # type: ignore[arg-type]

    try:
        if cell.race == "sweep-inside-repair":
            actors.note(order_id, "the sweeper runs between the repair's check and its lease")
            with _before_lease(lambda: actors.sweep()):
                answer = repair(target, order_id, cell.repair)  # type: ignore[arg-type]
        else:
            actors.note(order_id, "the repair runs between the sweeper's ListExecutions and its act")
            with _after_listing(operator):
                actors.sweep()
            if "raised" in answer:
                raise answer["raised"]
    finally:
        with actors.lock:
            actors.hidden.discard(order_id)
    return answer or {"result": "refused"}


@contextmanager
def _before_lease(act: Any) -> Iterator[None]:
    import ops.repair

    original = ops.repair._take_lease

    def take_lease(*args: Any, **kwargs: Any) -> str:
        act()
        return original(*args, **kwargs)

    with mock.patch.object(ops.repair, "_take_lease", take_lease):
        yield


@contextmanager
def _after_listing(act: Any) -> Iterator[None]:
    """Run ``act`` once, right after the sweeper listed the RUNNING executions (the sweeper
    function's own module, as its handler loaded it)."""
    import order_domain.sweeper  # the module the sweeper function's handler loaded (shared sys.modules)

    original = order_domain.sweeper.running_execution_names
    done: list[bool] = []

    def listed(*args: Any, **kwargs: Any) -> set[str]:
        names: set[str] = original(*args, **kwargs)
        if not done:
            done.append(True)
            act()
        return names

    with mock.patch.object(order_domain.sweeper, "running_execution_names", listed):
        yield


def _in_thread(act: Any) -> dict[str, Any]:
    """``act()``'s answer, run on a thread of its own (a fresh context: no Lambda caller in scope);
    what it raised as ``{"raised": exc}``."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out.update(act())
        except BaseException as exc:  # handed back to the caller's thread
            out["raised"] = exc

    thread = threading.Thread(target=run, name="operator", daemon=True)
    thread.start()
    thread.join()
    return out
