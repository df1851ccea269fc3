"""Each Lambda invocation's Powertools metrics are its own, as in its own execution environment on AWS.

On AWS an execution environment (one process) runs one invocation at a time
(https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html). The emulator runs every
function's concurrent invocations in one process, each in its own thread. Powertools Metrics keeps the
metrics, dimensions and metadata of every ``Metrics`` instance in dicts shared at class level
(``Metrics._metrics``, ``_dimensions``, ``_metadata``): in one process one function's flush could print
another's metrics under its own ``service`` dimension (an ``ExpectedErrors`` counted for the wrong function,
which pages its ``Errors - ExpectedErrors`` alarm) or clear them before they were printed.

Why hand-written: no library scopes Powertools' class-level state; a thread runs one invocation at a time, so
state per thread is state per invocation. Registered in :mod:`local_cloud.patches` (``metrics_per_invocation``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, MutableMapping
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

#: The class-level dicts every Metrics instance shares (aws_lambda_powertools.metrics.metrics.Metrics).
SHARED = ("_metrics", "_dimensions", "_metadata")


class PerThreadDict(MutableMapping[str, Any]):
    """A mapping whose contents belong to the calling thread."""

    def __init__(self) -> None:
        self._local = threading.local()

    def _own(self) -> dict[str, Any]:
        own: dict[str, Any] | None = getattr(self._local, "own", None)
        if own is None:
            own = self._local.own = {}
        return own

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
    """While active, ``Metrics`` instances created keep their metrics, dimensions and metadata per thread."""
    from aws_lambda_powertools.metrics.metrics import Metrics

    with ExitStack() as stack:
        for name in SHARED:
            stack.enter_context(mock.patch.object(Metrics, name, PerThreadDict()))
        yield
