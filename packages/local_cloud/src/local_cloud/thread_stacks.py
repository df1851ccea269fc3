"""Each thread's Python frames in one large block of memory: a workaround for CPython's data-stack
thrashing (python/cpython#142183), which this project's interpreter (3.13.0) has.

CPython keeps a thread's frames on a stack of 16 KiB chunks and frees a chunk (``munmap``) as soon as
the frame at its base returns, so a loop whose calls cross a chunk's edge maps, faults in and unmaps a
chunk on every call. A chaos shard's threads (moto's interpreter, botocore, the handlers) are deep and
loop there: perf (cpu-clock, one shard) put more than half of the shard's kernel time in ``mmap``,
``munmap`` and the page faults of ``_PyThreadState_PushFrame``. A thread that starts its work from a
frame large enough to need a chunk of :data:`CHUNK_BYTES` has room for its whole call stack in that one
chunk, which lives as long as the thread. CPython's fix (one cached chunk per thread,
python/cpython#146123, merged into the 3.13 branch in March 2026) makes this unnecessary: the patch's
canary fails on an interpreter that no longer thrashes, and the patch should then go.

Why hand-written: no library reaches CPython's frame allocator; this relies only on a frame taking a slot
of the data stack per local (the chunk sizes are CPython's, ``Python/pystate.c``): the canary checks it.
"""

from __future__ import annotations

import functools
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

#: The data-stack chunk a reserving frame takes (CPython doubles 16 KiB until the frame and 1,000 spare
#: slots fit): over half of it (about 70 KiB) is left for the thread's other frames. Each thread writes
#: the reserving frame's locals (page faults): at 512 KiB a 200-order shard faulted 623,000 times, at
#: 128 KiB 425,000, at 64 KiB 397,000 (2026-11-25), so this size leaves room to spare at little cost.
CHUNK_BYTES = 128 * 1024
#: Locals of the reserving frame: with its other slots and the 1,000 spare, just over half a chunk of 8-byte
#: slots, so CPython picks CHUNK_BYTES.
RESERVE_SLOTS = CHUNK_BYTES // 16 - 1_000


def _call(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


@functools.cache
def _reserving_frame(slots: int) -> Callable[..., Any]:
    """:func:`_call` with ``slots`` more (unused) locals: its frame needs that many slots of the data stack."""
    code = _call.__code__
    pads = tuple(f"_slot{i}" for i in range(slots))
    wide = code.replace(co_varnames=code.co_varnames + pads, co_nlocals=code.co_nlocals + slots)
    return types.FunctionType(wide, _call.__globals__, "reserve")


@contextmanager
def reserved_thread_stacks() -> Iterator[None]:
    """While active, every thread started runs inside a reserving frame (its frames stay in one chunk)."""
    reserve = _reserving_frame(RESERVE_SLOTS)
    bootstrap = threading.Thread._bootstrap_inner  # type: ignore[attr-defined]

    def bootstrap_inner(self: threading.Thread) -> None:
        reserve(bootstrap, self)

    with mock.patch.object(threading.Thread, "_bootstrap_inner", bootstrap_inner):
        yield
