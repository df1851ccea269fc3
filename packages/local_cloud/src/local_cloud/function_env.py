"""Each invocation sees its function's environment, from its module's import to its handler's return, as
in its own execution environment on Lambda (https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html:
the variables are set in the execution environment the function's code runs in).

The emulator runs every function's invocations in one process, each on its own thread, and ``os.environ``
is process-wide: setting a function's variables there for one invocation would show them to every other
thread (another function's invocation, the test itself) for as long as it runs, and serialising invocations
would change what a run measures. Instead, while any invocation runs, ``os.environ`` reads through an
overlay (:class:`InvocationEnviron`, installed over ``os.environ._data``, the mapping every ``os.environ``
and ``os.getenv`` read and write goes through): in a context that entered :func:`function_environment`,
the function's variables come first and the process's others show through below them; anywhere else it is
the process's own. The overlay lives in a context variable, so work the handler hands to a pool with its
context copied sees it too (as threads share one process on Lambda); a thread started without the context
sees the process's environment. A write inside an invocation stays in the invocation's overlay (plus the
C-level ``putenv`` ``os.environ`` does itself, seen only by subprocesses).

Why hand-written: no library scopes ``os.environ`` per thread or per context (``mock.patch.dict`` and
pytest's ``monkeypatch.setenv`` change the process's). The overlay is installed while at least one
invocation runs and removed after the last (registered in :mod:`local_cloud.patches`:
``function_environment``), so nothing of it outlives a run.
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

#: The running invocation's overlay (None outside an invocation: the process's environment).
_OVERLAY: contextvars.ContextVar[_Overlay | None] = contextvars.ContextVar("function_environment", default=None)
_install_lock = threading.Lock()
_installed: list[Any] = []  # the active patcher while invocations run, and how many do
_active = [0]


@dataclass
class _Overlay:
    """One invocation's variables (encoded as ``os.environ`` stores them) and the process keys it deleted."""

    values: dict[Any, Any]
    removed: set[Any] = field(default_factory=set)


class InvocationEnviron(MutableMapping[Any, Any]):
    """``os.environ``'s storage while invocations run: the running invocation's overlay over the process's."""

    def __init__(self, base: MutableMapping[Any, Any]) -> None:
        self.base = base

    def __getitem__(self, key: Any) -> Any:
        own = _OVERLAY.get()
        if own is not None:
            if key in own.values:
                return own.values[key]
            if key in own.removed:
                raise KeyError(key)
        return self.base[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        own = _OVERLAY.get()
        if own is None:
            self.base[key] = value
            return
        own.values[key] = value
        own.removed.discard(key)

    def __delitem__(self, key: Any) -> None:
        own = _OVERLAY.get()
        if own is None:
            del self.base[key]
            return
        if key not in self:
            raise KeyError(key)
        own.values.pop(key, None)
        own.removed.add(key)

    def __iter__(self) -> Iterator[Any]:
        own = _OVERLAY.get()
        if own is None:
            return iter(list(self.base))
        below = [k for k in list(self.base) if k not in own.values and k not in own.removed]
        return iter(below + list(own.values))

    def __len__(self) -> int:
        return sum(1 for _ in self)


def process_storage(storage: Any) -> Any:
    """The process's own ``os.environ`` storage beneath ``storage`` (itself unless it is the invocations' overlay):
    what a patch guard compares, since a served endpoint's invocations run across tests (``ops local up``)."""
    return storage.base if isinstance(storage, InvocationEnviron) else storage


def _install() -> None:
    with _install_lock:
        if _active[0] == 0:
            storage = vars(os.environ)["_data"]
            patcher = mock.patch.object(os.environ, "_data", InvocationEnviron(storage))
            patcher.start()
            _installed.append(patcher)
        _active[0] += 1


def _uninstall() -> None:
    with _install_lock:
        _active[0] -= 1
        if _active[0] == 0:
            _installed.pop().stop()


@contextmanager
def function_environment(env: Mapping[str, str]) -> Iterator[None]:
    """Within this context (this thread, and work handed on with its context copied), ``os.environ``
    holds ``env`` over the process's environment; elsewhere, the process's own."""
    encoded = {os.environ.encodekey(k): os.environ.encodevalue(str(v)) for k, v in env.items()}
    _install()
    token = _OVERLAY.set(_Overlay(encoded))
    try:
        yield
    finally:
        _OVERLAY.reset(token)
        _uninstall()
