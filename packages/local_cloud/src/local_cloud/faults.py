"""Fault injection for local runs: make chosen AWS calls answer like a throttled service.

Why hand-written: moto has no fault injection. We raise the service's own throttling error
from moto's backend, so the caller sees exactly what botocore would return from AWS.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

from moto.dynamodb.exceptions import DynamodbException

#: (backend method, table name, item or key attributes) -> throttle this call?
DynamoPredicate = Callable[[str, str, dict[str, Any]], bool]
#: moto DynamoDB backend methods that stand for an item-level API call.
ITEM_METHODS = ("put_item", "update_item", "get_item", "delete_item", "transact_write_items", "query")


class ThrottledError(DynamodbException):
    """DynamoDB's ProvisionedThroughputExceededException, as moto would render it."""

    def __init__(self) -> None:
        super().__init__(
            "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
            message="Injected fault: the request rate for the table exceeds the provisioned throughput",
        )


@dataclass
class FaultCounter:
    """How many faults of each kind were injected, and when each kind first happened (simulated
    seconds since the epoch, once ``clock`` is set; see :meth:`happened_at`)."""

    injected: dict[str, int] = field(default_factory=dict)
    first_at: dict[str, float] = field(default_factory=dict)
    clock: Callable[[], float] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, kind: str) -> None:
        with self._lock:
            self.injected[kind] = self.injected.get(kind, 0) + 1
            if self.clock is not None and kind not in self.first_at:
                self.first_at[kind] = self.clock()

    def happened_at(self, at: float) -> None:
        """Faults counted before they happened (planned extra messages, hostile executions) happen
        at ``at``: when they are sent."""
        with self._lock:
            for kind in self.injected:
                self.first_at.setdefault(kind, at)


@contextmanager
def throttle_dynamodb(
    predicate: DynamoPredicate, counter: FaultCounter | None = None, *, kind: str = "throttle"
) -> Iterator[FaultCounter]:
    """While active, DynamoDB item calls for which ``predicate`` is true raise a throttling error
    (counted as ``kind``). The predicate gets (method, table name or "", item/key attributes)."""
    from moto.dynamodb.models import DynamoDBBackend

    counter = counter or FaultCounter()

    def wrap(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def throttled(self: Any, *args: Any, **kwargs: Any) -> Any:
            table_name = args[0] if args and isinstance(args[0], str) else str(kwargs.get("table_name", ""))
            attrs = kwargs.get("item_attrs") or kwargs.get("key") or (args[1] if len(args) > 1 else {})
            if predicate(name, table_name, attrs if isinstance(attrs, dict) else {}):
                counter.add(kind)
                raise ThrottledError()
            return original(self, *args, **kwargs)

        return throttled

    with ExitStack() as stack:
        for name in ITEM_METHODS:
            stack.enter_context(mock.patch.object(DynamoDBBackend, name, wrap(name, getattr(DynamoDBBackend, name))))
        yield counter
