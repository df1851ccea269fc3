"""Simulated time for code that reads the wall clock: Powertools idempotency and metrics.

Why hand-written: freezegun would freeze or shift time for every thread, moto's own clocks
included; we only need the handlers' notion of "now" (in-progress expiry, record TTL) to follow the run's
:class:`~local_cloud.clock.SimClock`. A caller's own clock function follows it through the
``clock_hooks`` of :meth:`local_cloud.emulator.LocalCloud.running`.
"""

from __future__ import annotations

import contextvars
import datetime as real_dt
import types
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

from local_cloud.clock import SimClock

#: The simulated instants at which the running invocation's EMF documents were stamped (set per
#: invocation by :meth:`local_cloud.lambda_runtime.LocalFunction.invoke`; None outside one).
EMF_STAMPS: contextvars.ContextVar[list[float] | None] = contextvars.ContextVar("emf_stamps", default=None)


def _datetime_module(
    clock: SimClock, stamps: contextvars.ContextVar[list[float] | None] | None = None
) -> types.SimpleNamespace:
    class SimDatetime(real_dt.datetime):
        @classmethod
        def now(cls, tz: Any = None) -> SimDatetime:
            at = clock.now()
            recorded = stamps.get() if stamps is not None else None
            if recorded is not None:
                recorded.append(at)
            return cls.fromtimestamp(at, tz)

    return types.SimpleNamespace(
        datetime=SimDatetime, timedelta=real_dt.timedelta, timezone=real_dt.timezone, date=real_dt.date
    )


@contextmanager
def simulated_now(clock: SimClock) -> Iterator[None]:
    """Powertools idempotency (in-progress expiry, TTL) and the EMF documents' ``Timestamp`` (metrics)
    read ``clock`` instead of the wall clock."""
    from aws_lambda_powertools.metrics.provider.cloudwatch_emf import cloudwatch
    from aws_lambda_powertools.utilities.idempotency.persistence import base, datarecord, dynamodb

    fake = _datetime_module(clock)
    with ExitStack() as stack:
        for module in (base, dynamodb, datarecord):
            stack.enter_context(mock.patch.object(module, "dt", fake))
        # The EMF stamp is recorded too: AWS/Lambda's datapoint of the invocation falls at the same instant.
        stack.enter_context(mock.patch.object(cloudwatch, "dt", _datetime_module(clock, EMF_STAMPS)))
        yield
