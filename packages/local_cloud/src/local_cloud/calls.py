"""Count the AWS API calls of a local run, by service and operation (as AWS would bill them)."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock
from urllib.parse import urlparse

_outside = threading.local()


@contextmanager
def outside_the_pipeline() -> Iterator[None]:
    """Calls made in this block (this thread) are not the deployment's: e.g. a caller's local stand-in
    for a third-party provider (a ``service`` of :meth:`local_cloud.emulator.LocalCloud.running`) bills
    its own AWS account, not the deployment's."""
    previous = getattr(_outside, "active", False)
    _outside.active = True
    try:
        yield
    finally:
        _outside.active = previous


def outside_active() -> bool:
    """Whether this thread is in :func:`outside_the_pipeline` (a provider stand-in's work)."""
    return bool(getattr(_outside, "active", False))


class CallCounter:
    """The pipeline's AWS calls by (service, operation); a provider stand-in's calls apart."""

    def __init__(self) -> None:
        self.calls: Counter[tuple[str, str]] = Counter()
        self.outside: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()

    def add(self, service: str, operation: str) -> None:
        with self._lock:
            (self.outside if getattr(_outside, "active", False) else self.calls)[(service, operation)] += 1

    def by_service(self) -> dict[str, int]:
        out: Counter[str] = Counter()
        for (service, _), n in self.calls.items():
            out[service] += n
        return dict(out)

    def operations(self) -> dict[str, int]:
        return {f"{service}:{operation}": n for (service, operation), n in sorted(self.calls.items())}


def _describe(request: Any) -> tuple[str, str]:
    host = urlparse(request.url).hostname or "unknown"
    service = host.split(".")[0]
    target = request.headers.get("X-Amz-Target")
    if target:
        operation = (target.decode() if isinstance(target, bytes) else str(target)).rsplit(".", 1)[-1]
    elif service == "lambda" and "/invocations" in request.url:
        operation = "Invoke"
    else:
        operation = (
            f"{request.method} {urlparse(request.url).path.split('/')[1] if '/' in urlparse(request.url).path else ''}"
        )
    return service, operation


@contextmanager
def count_aws_calls() -> Iterator[CallCounter]:
    """Count every request moto answers in-process while the context is active."""
    from moto.core.botocore_stubber import BotocoreStubber

    counter = CallCounter()
    original = BotocoreStubber.__call__

    def counting(self: Any, event_name: str, request: Any, **kwargs: Any) -> Any:
        if self.enabled:
            counter.add(*_describe(request))
        return original(self, event_name, request, **kwargs)

    with mock.patch.object(BotocoreStubber, "__call__", counting):
        yield counter
