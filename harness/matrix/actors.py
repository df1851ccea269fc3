"""The fault matrix's concurrent actors: what runs *while* an order's execution is live (issue 28).

The serialized matrix submits, drains, repairs, drains and sweeps in turn; production does not wait.
These hooks run a second actor at a chosen point inside a running execution (the emulator executes
each execution on its own thread, so the step is really suspended there while the actor works), or
keep a first request in flight while a second one arrives:

- ``race``: inside the Task state, before or after it acted, run an actor synchronously: the
  sweeper (the order aged past its threshold, ListExecutions consistent or lagging), a redelivery of
  the order's message (what ``ops dlq replay`` puts back on the orders queue), or payment attempt
  N+1. The step continues only once the actor is done.
- ``duplicate``: a second, live invocation of the same step with the same event (Lambda may invoke a
  function more than once for one event:
  https://docs.aws.amazon.com/lambda/latest/dg/invocation-retries.html). It starts first and stops
  right after its idempotency record is IN_PROGRESS; Step Functions' own invocation then runs. The
  duplicate resumes once that invocation answered (``first-answer``) or once the execution left the
  state (``outlives-retries``).
- ``inflight``: the provider receives a request and keeps processing it; the adapter's read times out
  and its retry (same key) is answered 409 by the provider, for real, while the first is held. The
  first completes after the 409 (``once``) or once the execution left the state and its
  compensation (``forever``: it settles after the saga gave up).
- ListExecutions lags: executions of an order the plan hides are left out of ListExecutions while
  hidden ("eventually consistent ... may not reflect very recent updates":
  https://docs.aws.amazon.com/step-functions/latest/apireference/API_ListExecutions.html).

Why hand-written: no library injects concurrency into moto's Step Functions or an HTTP sandbox.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any
from unittest import mock
from urllib.parse import unquote, urlsplit

from harness.faults.cells import Rule
from harness.faults.inject import FaultPlan, find_order_id, provider_call
from harness.workload.orders import MARKER_HEX

#: Wall seconds an actor or a held request waits at most for what it waits for.
WAIT_CAP_SECONDS = 30.0
#: The compensation that follows each provider action's state (where an in-flight request may still
#: be answered 409 before it is let go).
COMPENSATION_OF = {
    "ChargePayment": "RefundPayment",
    "ShipOrder": "CancelShipment",
    "ReserveInventory": "ReleaseInventory",
}


def _wait(until: Callable[[], bool], cap: float = WAIT_CAP_SECONDS) -> bool:
    deadline = time.monotonic() + cap
    while not until():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@dataclass
class Actors:
    """What the race actors act through (set by :mod:`harness.matrix.fault_matrix` from its run)."""

    sweep: Callable[[], Any] = lambda: None
    age: Callable[[str], None] = lambda order_id: None
    send: Callable[[dict[str, Any], str | None], None] = lambda order, cid: None
    orders: dict[str, tuple[dict[str, Any], str | None]] = field(default_factory=dict)
    #: Order IDs whose executions ListExecutions leaves out while present.
    hidden: set[str] = field(default_factory=set)
    #: Order IDs whose redelivered or next-attempt message intake has processed.
    delivered: dict[str, int] = field(default_factory=dict)
    #: Order IDs whose idempotency records expired (each record is deleted once: expire_record).
    expired: set[str] = field(default_factory=set)
    deleted_keys: set[str] = field(default_factory=set)
    #: What each race did, by order ID (for the report: e.g. whether a message was processed in time).
    notes: dict[str, list[str]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, order_id: str, text: str) -> None:
        with self.lock:
            self.notes.setdefault(order_id, []).append(text)

    def race(self, plan: FaultPlan, rule: Rule, order_id: str) -> None:
        """The ``race`` rule's actor, now (:func:`run_race`)."""
        run_race(plan, self, rule, order_id)

    def hooks(self, plan: FaultPlan) -> AbstractContextManager[None]:
        """The duplicate-invocation, in-flight and ListExecutions hooks (:func:`inject_actors`)."""
        return inject_actors(plan, self)


def next_attempt(order: dict[str, Any]) -> dict[str, Any]:
    """Payment attempt N+1 of ``order``: the same order with a new good token (all that may change)."""
    attempt = int(order.get("payment_attempt", 1)) + 1
    marker = hashlib.sha256(f"{order['order_id']}#{attempt}".encode()).hexdigest()[:MARKER_HEX]
    return {**order, "payment_attempt": attempt, "payment_token": f"tok_ok_{marker}"}


def run_race(plan: FaultPlan, actors: Actors, rule: Rule, order_id: str) -> None:
    """Run the rule's actor now, on the execution's thread (the step waits for it)."""
    if rule.error == "sweep":
        actors.age(order_id)
        if rule.action == "lagging":
            with actors.lock:
                actors.hidden.add(order_id)
        try:
            actors.sweep()
        finally:
            with actors.lock:
                actors.hidden.discard(order_id)
        actors.note(order_id, f"swept inside {rule.state} ({rule.action or 'listed'})")
        return
    order, cid = actors.orders[order_id]
    message = next_attempt(order) if rule.error == "attempt2" else order
    if rule.error == "attempt2":
        actors.orders[order_id] = (message, cid)
    before = actors.delivered.get(order_id, 0)
    actors.send(message, cid)
    processed = _wait(lambda: actors.delivered.get(order_id, 0) > before, cap=WAIT_CAP_SECONDS)
    actors.note(order_id, f"{rule.error} {'processed' if processed else 'sent'} inside {rule.state}")


@contextmanager
def inject_actors(plan: FaultPlan, actors: Actors) -> Iterator[None]:
    """The duplicate-invocation, in-flight and ListExecutions hooks (see the module docstring)."""
    with ExitStack() as stack:
        stack.enter_context(_duplicates(plan, actors))
        stack.enter_context(_in_flight(plan, actors))
        stack.enter_context(_lagging_list(actors))
        yield


_local = threading.local()


@contextmanager
def _duplicates(plan: FaultPlan, actors: Actors) -> Iterator[None]:
    from aws_lambda_powertools.utilities.idempotency.persistence.base import BasePersistenceLayer

    from local_cloud.lambda_runtime import LocalFunction

    original_invoke = LocalFunction.invoke
    original_save = BasePersistenceLayer.save_inprogress

    @functools.wraps(original_save)
    def save_inprogress(self: Any, data: Any, remaining_time_in_millis: int | None = None) -> Any:
        expire_record(self, data, actors)
        result = original_save(self, data, remaining_time_in_millis)
        gate: _Gate | None = getattr(_local, "gate", None)
        if gate is not None:
            gate.held = True
            gate.saved.set()
            _wait(gate.release)
        return result

    @functools.wraps(original_invoke)
    def invoke(fn: Any, event: Any) -> tuple[str, bool]:
        if isinstance(event, dict) and "Records" in event:  # an event source mapping's batch
            try:
                return original_invoke(fn, event)
            finally:
                intake_seen(actors, event)
        order_id = find_order_id(event) if isinstance(event, dict) else None
        rule = None
        if order_id is not None and plan.applies(order_id):
            rule = plan.fire(order_id, plan.current_state(order_id), ("duplicate",))
        if rule is None or order_id is None:
            return original_invoke(fn, event)
        return _duplicated(original_invoke, fn, event, (plan, actors, rule, order_id))

    with (
        mock.patch.object(BasePersistenceLayer, "save_inprogress", save_inprogress),
        mock.patch.object(LocalFunction, "invoke", invoke),
    ):
        yield


def _duplicated(
    original_invoke: Callable[[Any, Any], tuple[str, bool]],
    fn: Any,
    event: Any,
    fired: tuple[FaultPlan, Actors, Rule, str],
) -> tuple[str, bool]:
    """Step Functions' invocation of ``fn`` with a live duplicate of it, started first and held at its
    IN_PROGRESS record until the first answered (or the execution left the state: ``outlives-retries``)."""
    plan, actors, rule, order_id = fired
    state = rule.state
    answered = threading.Event()
    if rule.action == "outlives-retries":
        gate = _Gate(lambda: plan.current_state(order_id) != state)
    else:
        gate = _Gate(answered.is_set)

    def duplicate() -> None:
        _local.gate = gate
        try:
            original_invoke(fn, event)
        finally:
            _local.gate = None
            gate.saved.set()

    thread = threading.Thread(target=duplicate, name=f"duplicate-{state}", daemon=True)
    thread.start()
    gate.saved.wait(WAIT_CAP_SECONDS)
    try:
        return original_invoke(fn, event)
    finally:
        answered.set()
        how = "held at its IN_PROGRESS record while the step ran" if gate.held else "ran to its end first"
        actors.note(order_id, f"duplicate invocation of {state} ({rule.action}): {how}")


def expire_record(layer: Any, data: Any, actors: Actors) -> None:
    """The order's idempotency records expired (``Actors.expired``): each is gone once, as DynamoDB's
    TTL deletes an expired item (Powertools' ``expires_after_seconds``; the record written after it
    stays)."""
    from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import DataRecord

    order_id = find_order_id(data)
    if order_id is None or order_id not in actors.expired:
        return
    key = layer._get_hashed_idempotency_key(data)
    with actors.lock:
        if key in actors.deleted_keys:
            return
        actors.deleted_keys.add(key)
    layer._delete_record(DataRecord(idempotency_key=key))
    actors.note(order_id, "an idempotency record expired")


@dataclass
class _Gate:
    release: Callable[[], bool]
    saved: threading.Event = field(default_factory=threading.Event)
    held: bool = False


def _request_key(action: str, url: str, headers: Any) -> str | None:
    """The key the provider claims for this request: the Idempotency-Key, or a cancel's shipment key."""
    if action == "cancel":
        path = urlsplit(url).path
        return unquote(path[len("/carrier/shipments/") : -len("/cancel")])
    for name, value in dict(headers or {}).items():
        if str(name).lower() == "idempotency-key":
            return str(value)
    return None


@contextmanager
def _in_flight(plan: FaultPlan, actors: Actors) -> Iterator[None]:
    """``inflight`` rules: the first request is sent again on its own connection and held at the
    provider; the caller's read times out; what follows with the key is answered 409 by the provider."""
    import urllib3

    from sandbox.http_server import holding

    pool_class = urllib3.connectionpool.HTTPConnectionPool
    original_request = pool_class._make_request
    pending: dict[str, Callable[[], bool]] = {}
    released: set[str] = set()
    lock = threading.Lock()

    def hold(provider: str, request: dict[str, Any]) -> None:
        del provider
        with lock:
            until = pending.pop(str(request.get("idempotency_key")), None)
        if until is not None:
            _wait(until)

    @functools.wraps(original_request)
    def make_request(self: Any, conn: Any, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        if getattr(_local, "background", False):
            return original_request(self, conn, method, url, *args, **kwargs)
        body = kwargs.get("body", args[0] if args else None)
        action, order_id = provider_call(method, url, body)
        rule = None
        if action and order_id and plan.applies(order_id):
            rule = plan.fire(order_id, plan.current_state(order_id), ("inflight",), action=action)
        key = _request_key(action or "", url, kwargs.get("headers")) if action else None
        if rule is None or key is None:
            response = original_request(self, conn, method, url, *args, **kwargs)
            if key is not None and getattr(response, "status", 0) == 409:
                with lock:
                    released.add(key)  # ``once``: the first request completes after one 409
                if order_id:
                    actors.note(order_id, f"409 in flight for {action}")
            return response
        assert order_id is not None  # the rule fired for it
        owner = order_id
        state = rule.state
        waits = {state, COMPENSATION_OF.get(state, state)}
        until = _release_when(
            rule.persistence, lambda: key in released, lock, lambda: plan.current_state(owner) not in waits
        )
        with lock:
            pending[key] = until
        origin = f"{self.scheme}://{self.host}:{self.port}"
        thread = threading.Thread(
            target=_send_alone, args=(method, origin + url, body, kwargs.get("headers")), daemon=True
        )
        thread.start()
        _wait(lambda: key not in pending, cap=5.0)  # the provider holds it now (the key is claimed)
        raise urllib3.exceptions.ReadTimeoutError(self, url, "Read timed out. (the provider is still processing)")

    with holding(hold), mock.patch.object(pool_class, "_make_request", make_request):
        yield


def _release_when(
    persistence: str, released: Callable[[], bool], lock: threading.Lock, left: Callable[[], bool]
) -> Callable[[], bool]:
    """When a held request is let go: after one 409 (``once``: ``released`` under ``lock``), else once
    the execution ``left`` the state and its compensation."""
    if persistence != "once":
        return left

    def until() -> bool:
        with lock:
            return released()

    return until


def _send_alone(method: str, url: str, body: Any, headers: Any) -> None:
    import urllib3

    _local.background = True
    try:
        urllib3.PoolManager().request(method, url, body=body, headers=dict(headers or {}), retries=False, timeout=60)
    except urllib3.exceptions.HTTPError:
        return  # the held request's own answer is nobody's: the caller already timed out


@contextmanager
def _lagging_list(actors: Actors) -> Iterator[None]:
    from moto.stepfunctions.models import StepFunctionBackend

    original = StepFunctionBackend.list_executions

    @functools.wraps(original)
    def list_executions(self: Any, *args: Any, **kwargs: Any) -> Any:
        results, token = original(self, *args, **kwargs)
        with actors.lock:
            hidden = set(actors.hidden)
        if hidden:
            results = [e for e in results if not any(f"order-{oid}-attempt-" in e.name for oid in hidden)]
        return results, token

    with mock.patch.object(StepFunctionBackend, "list_executions", list_executions):
        yield


def intake_seen(actors: Actors, event: Any) -> None:
    """Count, per order, the order messages intake processed (redeliveries and new attempts)."""
    for record in (event or {}).get("Records") or []:
        try:
            body = json.loads(record.get("body") or "")
        except ValueError:
            continue
        if isinstance(body, dict) and isinstance(body.get("order_id"), str):
            with actors.lock:
                actors.delivered[body["order_id"]] = actors.delivered.get(body["order_id"], 0) + 1
