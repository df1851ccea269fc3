"""Chaos for the local run: duplicate deliveries, crashes, malformed payloads, hostile input, throttling.

Business failures (declines, failed shipments, refunds that keep failing) are decided by the
order's content (see :mod:`harness.workload.orders`); this module injects the infrastructure faults.
Every injected fault is counted in :class:`FaultCounter`, so the report can compare effects
(from the sandbox ledgers) with causes.
"""

from __future__ import annotations

import functools
import json
import random
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

from moto.core.exceptions import ServiceException

from harness.workload.hostile import KINDS as HOSTILE_KINDS
from harness.workload.hostile import HostileExecution, HostileMessage, make_hostile
from harness.workload.orders import check_rates
from local_cloud.clock import SimClock
from local_cloud.faults import FaultCounter, throttle_dynamodb
from local_cloud.lambda_runtime import SimulatedCrash

#: Malformed bodies: not JSON, wrong type, schema violations.
MALFORMED_BODIES = (
    "{not json",
    "[]",
    '{"order_id": "broken"}',
    '{"order_id": "bad id with spaces", "customer_id": "c", "items": [], "payment_token": "t", '
    '"shipping_address": {}, "currency": "EUR"}',
    "\u0000\u0001",
)
_SQS_METHODS = ("send_message", "send_message_batch")


@dataclass(frozen=True)
class FaultRates:
    """Infrastructure fault rates (0..1), each applied independently.

    Attributes:
        duplicate: per order, an extra delivery: in the same batch, in a later batch, or late
            (after the first drain), one of the three chosen at random.
        crash: per idempotent operation, an abrupt end after the side effect and before the
            completion marker (the sandbox is killed, as by a timeout).
        malformed: per order, an extra malformed message.
        throttle: per DynamoDB item call / SQS send, a throttling error.
        hostile: per order, one extra hostile input of a kind chosen at random
            (:mod:`harness.workload.hostile`: deep nesting, oversize, floats, wrong types, unknown order).
        ambiguous: per provider request (charge, refund, ship, cancel), the provider acts and its
            answer is lost (read timeout or connection reset, at the transport).
        status_write_fail: per status-write attempt (the saga's direct DynamoDB integrations), a DynamoDB
            error AWS documents for it (throttling, server, validation, access, KMS); per outcome write
            of a step (decision 0024), throttling, a server error, a failed condition, or the function
            dying between its effect and the write.
        park_fail: per attempt of the park (MarkNeedsAttention), Lambda.Unknown after it acted or
            Lambda.ServiceException before.
        stop: per Task state entered, StopExecution there (an operator's stop).
    """

    duplicate: float = 0.0
    crash: float = 0.0
    malformed: float = 0.0
    throttle: float = 0.0
    hostile: float = 0.0
    ambiguous: float = 0.0
    status_write_fail: float = 0.0
    park_fail: float = 0.0
    stop: float = 0.0

    def __post_init__(self) -> None:
        check_rates(self)


Message = tuple[str, str | None]  # (body, correlation id)


@dataclass
class DeliveryPlan:
    """What the producer sends, in order, and the hostile inputs among it."""

    initial: list[Message] = field(default_factory=list)
    late: list[Message] = field(default_factory=list)  # sent after the first drain
    hostile: list[HostileMessage | HostileExecution] = field(default_factory=list)

    @property
    def hostile_executions(self) -> list[HostileExecution]:
        return [h for h in self.hostile if isinstance(h, HostileExecution)]


def plan_deliveries(
    orders: list[tuple[dict[str, Any], str | None]], rates: FaultRates, rng: random.Random, counter: FaultCounter
) -> DeliveryPlan:
    """The messages to send (each order, then its injected extras) and the hostile executions to start.

    The RNG is only rolled for the fault kinds that are on, so a seed gives the same plan as
    before a kind existed when that kind is off.
    """
    plan = DeliveryPlan()
    initial, late = plan.initial, plan.late
    cross_batch: list[tuple[int, Message]] = []
    for order, cid in orders:
        message = (json.dumps(order), cid)
        initial.append(message)
        if rng.random() < rates.duplicate:
            kind = rng.choice(("same_batch", "cross_batch", "late"))
            counter.add(f"duplicate_{kind}")
            if kind == "same_batch":
                initial.append(message)
            elif kind == "cross_batch":
                cross_batch.append((len(initial) + rng.randint(12, 40), message))
            else:
                late.append(message)
        if rng.random() < rates.malformed:
            counter.add("malformed")
            initial.append((rng.choice(MALFORMED_BODIES), f"cid-malformed-{rng.getrandbits(40):010x}"))
        if rates.hostile and rng.random() < rates.hostile:
            hostile = make_hostile(rng.choice(HOSTILE_KINDS), rng)
            counter.add(f"hostile_{hostile.kind}")
            plan.hostile.append(hostile)
            if isinstance(hostile, HostileMessage):
                initial.append((hostile.body, hostile.correlation_id))
    for position, message in sorted(cross_batch, key=lambda pm: pm[0], reverse=True):
        initial.insert(min(position, len(initial)), message)
    return plan


class _Dice:
    """A thread-safe seeded RNG."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def roll(self, rate: float) -> bool:
        if rate <= 0:
            return False
        with self._lock:
            return self._rng.random() < rate


class SqsThrottled(ServiceException):
    code = "RequestThrottled"
    message = "Injected fault: request throttled"


#: Rate fields of the faults injected in the saga's glue and at the provider transport, and their
#: kinds in :class:`harness.faults.random_faults.RandomFaults`.
SAGA_FAULTS = {"ambiguous": "ambiguous", "status_write_fail": "status_write", "park_fail": "park", "stop": "stop"}


@contextmanager
def inject(
    rates: FaultRates,
    seed: int,
    clock: SimClock,
    counter: FaultCounter,
    definition: Mapping[str, Any] | None = None,
) -> Iterator[None]:
    """Crash and throttle injection while the context is active; with the state machine's
    ``definition``, the saga faults too (:data:`SAGA_FAULTS`)."""
    from aws_lambda_powertools.utilities.idempotency.persistence.base import BasePersistenceLayer
    from moto.sqs.models import SQSBackend

    dice = _Dice(seed)

    def crashing(original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def save_success(self: Any, data: Any, result: Any) -> Any:
            if dice.roll(rates.crash):
                counter.add("crash")
                raise SimulatedCrash("killed after the side effect, before the completion marker")
            return original(self, data, result)

        return save_success

    def throttling(kind: str, error: Callable[[], Exception], original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def call(*args: Any, **kwargs: Any) -> Any:
            if dice.roll(rates.throttle):
                counter.add(kind)
                raise error()
            return original(*args, **kwargs)

        return call

    with ExitStack() as stack:
        if rates.crash:
            original = BasePersistenceLayer.save_success
            stack.enter_context(mock.patch.object(BasePersistenceLayer, "save_success", crashing(original)))
        if rates.throttle:
            roll = functools.partial(dice.roll, rates.throttle)
            stack.enter_context(throttle_dynamodb(lambda *_: roll(), counter, kind="throttle_dynamodb"))
            for name in _SQS_METHODS:
                patched = throttling("throttle_sqs", SqsThrottled, getattr(SQSBackend, name))
                stack.enter_context(mock.patch.object(SQSBackend, name, patched))
        saga_rates = {kind: getattr(rates, name) for name, kind in SAGA_FAULTS.items()}
        if definition is not None and any(saga_rates.values()):
            from harness.faults.inject import inject_plan
            from harness.faults.random_faults import RandomFaults

            stack.enter_context(inject_plan(RandomFaults(definition, saga_rates, seed + 7, counter)))
        yield
