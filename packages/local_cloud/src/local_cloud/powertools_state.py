"""Each Lambda invocation's Powertools metrics are its own, as in its own execution environment on AWS.

On AWS an execution environment (one process) runs one invocation at a time
(https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html). The emulator runs every
function's concurrent invocations in one process, each in its own thread. Powertools Metrics keeps the
metrics, dimensions and metadata of every ``Metrics`` instance in dicts shared at class level
(``Metrics._metrics``, ``_dimensions``, ``_metadata``): in one process one function's flush could print
another's metrics under its own ``service`` dimension (an ``ExpectedErrors`` counted for the wrong function,
which pages its ``Errors - ExpectedErrors`` alarm) or clear them before they were printed.

Why hand-written: no library scopes Powertools' class-level state. The state lives in a context variable that
:meth:`local_cloud.lambda_runtime.LocalFunction.invoke` sets afresh per invocation (:func:`invocation_scope`):
work the handler hands to a pool with its context copied (the batch processor's record workers) shares its
invocation's metrics, as threads share one process on AWS. Registered in :mod:`local_cloud.patches`
(``metrics_per_invocation``).
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, MutableMapping
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

#: The class-level dicts every Metrics instance shares (aws_lambda_powertools.metrics.metrics.Metrics).
SHARED = ("_metrics", "_dimensions", "_metadata")
#: The running invocation's own dicts, by name (None outside an invocation: created per context on first use).
_STATE: contextvars.ContextVar[dict[str, dict[str, Any]] | None] = contextvars.ContextVar(
    "powertools_metrics_state", default=None
)


@contextmanager
def invocation_scope() -> Iterator[None]:
    """One invocation: the Powertools metrics it adds and flushes are its own."""
    token = _STATE.set({})
    try:
        yield
    finally:
        _STATE.reset(token)


class PerInvocationDict(MutableMapping[str, Any]):
    """A mapping whose contents belong to the running invocation (its context)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def _own(self) -> dict[str, Any]:
        state = _STATE.get()
        if state is None:
            state = {}
            _STATE.set(state)
        return state.setdefault(self.name, {})

    def __getitem__(self, key: str) -> Any:
        return self._own()[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._own()[key] = value

    def __delitem__(self, key: str) -> None:
        del self._own()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._own()))

    def __len__(self) -> int:
        return len(self._own())

    def clear(self) -> None:
        self._own().clear()


@contextmanager
def metrics_per_invocation() -> Iterator[None]:
    """While active, ``Metrics`` instances created keep their metrics, dimensions and metadata per invocation."""
    from aws_lambda_powertools.metrics.metrics import Metrics

    with ExitStack() as stack:
        for name in SHARED:
            stack.enter_context(mock.patch.object(Metrics, name, PerInvocationDict(name)))
        yield
