"""The sweeper's provider lookups, paced below the provider's read limit and run a few at a time.

:class:`Pacer` is a token bucket (``rate`` a second, at most one second of it at once: the provider counts
requests per second, so any one second sees at most twice the rate, the provider's whole endpoint limit at
:data:`order_domain.reconcile_sizing.READ_SHARE` 0.5); :func:`paced` wraps a provider so that each lookup takes
a token first, whatever thread calls it. :func:`run_bounded` runs one action per item on at most ``workers``
threads, each in a copy of the caller's context (each action puts its own order's correlation ID on its thread:
``correlation_scope`` is per thread). :func:`sweep_budget` makes the sweep's remaining time the retry budget of
the sweeper's HTTPS clients (:func:`sweep_seconds_left`): the sweeper is no idempotent step, so the invocation
the clients read by default is not registered there, and their retries waited with no bound.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

#: The running sweep's remaining time (set by :func:`sweep_budget`; worker threads get it with the caller's context).
_sweep_left: contextvars.ContextVar[Callable[[], float] | None] = contextvars.ContextVar("sweep_left", default=None)


def sweep_seconds_left() -> float | None:
    """The running sweep's remaining time, None outside one: the sweeper's HTTPS clients retry only within it
    (``order_domain.https_providers``: a retry's wait plus one more request must fit)."""
    left = _sweep_left.get()
    return None if left is None else left()


@contextlib.contextmanager
def sweep_budget(seconds_left: Callable[[], float]) -> Iterator[None]:
    """:func:`sweep_seconds_left` reads ``seconds_left`` until exit."""
    token = _sweep_left.set(seconds_left)
    try:
        yield
    finally:
        _sweep_left.reset(token)


class Pacer:
    """At most ``rate`` calls a second on average, ``rate`` at once (``clock``/``sleep``: injectable for tests)."""

    def __init__(
        self,
        rate: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rate <= 0:
            raise ValueError(f"rate must be positive, got {rate}")
        self.rate, self.capacity = rate, max(1.0, rate)
        self._clock, self._sleep = clock, sleep
        self._tokens, self._at = self.capacity, clock()
        self._lock = threading.Lock()
        self.taken = 0

    def take(self) -> None:
        """Take a token, waiting until it is due (a token not there yet is reserved: the bucket goes below
        zero and the caller sleeps until it would have refilled, so later callers queue behind it)."""
        with self._lock:
            now = self._clock()
            self._tokens = min(self.capacity, self._tokens + (now - self._at) * self.rate) - 1
            self._at = now
            self.taken += 1
            wait = -self._tokens / self.rate if self._tokens < 0 else 0.0
        if wait > 0:
            self._sleep(wait)


class _Paced:
    """A provider whose ``find_*`` lookups each take a token of the pacer first (any other attribute: as is)."""

    def __init__(self, inner: Any, pacer: Pacer) -> None:
        self._inner, self._pacer = inner, pacer

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if not name.startswith("find_") or not callable(attribute):
            return attribute

        def lookup(*args: Any, **kwargs: Any) -> Any:
            self._pacer.take()
            return attribute(*args, **kwargs)

        return lookup


def paced(provider: T, pacer: Pacer) -> T:
    """``provider`` with its lookups paced (typed as the provider: a proxy of the same calls)."""
    return _Paced(provider, pacer)  # type: ignore[return-value]


def run_bounded(action: Callable[[T], None], items: Iterable[T], workers: int) -> None:
    """``action(item)`` for each item, at most ``workers`` at once; returns when all are done (``action`` must
    not raise: the sweeper's per-order wrapper logs and counts its own errors)."""
    todo = list(items)
    if workers <= 1 or len(todo) <= 1:
        for item in todo:
            action(item)
        return
    with ThreadPoolExecutor(max_workers=min(workers, len(todo)), thread_name_prefix="lookup") as pool:
        # Each action in a copy of the caller's context (its trace context, for one): a thread starts with none.
        for future in [pool.submit(contextvars.copy_context().run, action, item) for item in todo]:
            future.result()
