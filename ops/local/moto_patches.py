"""Make moto behave like the real services where our guarantees depend on it.

Why hand-written: real DynamoDB applies a conditional write atomically per item. moto evaluates
the condition and then stores the item as two Python steps, so two threads can both pass the
same condition. Every guarantee we test under concurrency (one side effect from 16 concurrent
deliveries) rests on that atomicity, so we serialise moto's DynamoDB writes and reads with one lock.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

_lock = threading.RLock()
_METHODS = ("put_item", "update_item", "delete_item", "transact_write_items", "get_item", "transact_get_items")


def _serialised(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with _lock:
            return method(*args, **kwargs)

    return wrapper


@contextmanager
def atomic_dynamodb() -> Iterator[None]:
    """Within this context moto's DynamoDB item operations run one at a time."""
    from moto.dynamodb.models import DynamoDBBackend

    with ExitStack() as stack:
        for name in _METHODS:
            original = getattr(DynamoDBBackend, name)
            stack.enter_context(mock.patch.object(DynamoDBBackend, name, _serialised(original)))
        yield
