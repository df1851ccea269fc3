"""Simulated time for code that reads the wall clock: Powertools idempotency and metrics.

Why hand-written: freezegun would freeze or shift time for every thread, moto's own clocks
included; we only need the handlers' notion of "now" (in-progress expiry, record TTL) to follow the run's
:class:`~local_cloud.clock.SimClock`. A caller's own clock function follows it through the
``clock_hooks`` of :meth:`local_cloud.emulator.LocalCloud.running`.
"""

from __future__ import annotations

import datetime as real_dt
import types
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

from local_cloud.clock import SimClock


def _datetime_module(clock: SimClock) -> types.SimpleNamespace:
    class SimDatetime(real_dt.datetime):
        @classmethod
        def now(cls, tz: Any = None) -> SimDatetime:
            return cls.fromtimestamp(clock.now(), tz)

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
        for module in (base, dynamodb, datarecord, cloudwatch):
            stack.enter_context(mock.patch.object(module, "dt", fake))
        yield
