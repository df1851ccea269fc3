"""Records of a batch processed concurrently, on Powertools' public ``AsyncBatchProcessor``.

Powertools' ``BatchProcessor`` runs records one after another, and its ``AsyncBatchProcessor``
needs a coroutine handler while boto3 is synchronous. :func:`concurrently` turns a synchronous
record handler into the coroutine ``AsyncBatchProcessor`` expects: each record runs on a shared
thread pool (``loop.run_in_executor``), in a copy of the caller's context (correlation IDs and
Powertools' thread-safe log keys and OpenTelemetry's current span are context variables).
Partial responses, failure collection and the all-failed behaviour are Powertools' own.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

R = TypeVar("R")

#: Records of one batch processed at once. A standard queue promises no ordering, so records may
#: run concurrently; with N AWS round trips per record the batch takes ~N round trips, not 10 x N.
DEFAULT_CONCURRENCY = 10

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def executor() -> ThreadPoolExecutor:
    """The process-wide pool records run on (created on first use, reused across invocations)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=DEFAULT_CONCURRENCY, thread_name_prefix="record")
        return _pool


def concurrently(handler: Callable[[Any], R]) -> Callable[[Any], Awaitable[R]]:
    """An async record handler for ``AsyncBatchProcessor`` that runs ``handler`` on the pool."""

    async def run(record: Any) -> R:
        context = contextvars.copy_context()
        return await asyncio.get_running_loop().run_in_executor(executor(), context.run, handler, record)

    return run
