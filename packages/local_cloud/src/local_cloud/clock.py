"""Simulated time for the local run: visibility timeouts pass without waiting for them."""

from __future__ import annotations

import bisect
import threading
import time


class SimClock:
    """Wall time plus an offset that the runner advances when nothing else can progress."""

    def __init__(self) -> None:
        self._offset = 0.0
        #: (wall time of each advance, the offset from then on): what the simulated time was at a past
        #: wall-clock instant (moto stamps some dates, e.g. an execution's stopDate, with the wall clock).
        self._moves: list[tuple[float, float]] = []
        self._lock = threading.Lock()
        self._moved = threading.Condition()

    def now(self) -> float:
        # No lock: reading one float attribute is atomic, and moto's SQS asks for the time once per
        # message per queue scan (about 200,000 times in a 100-order chaos run).
        return time.time() + self._offset

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("time only moves forward")
        with self._lock:
            self._offset += seconds
            self._moves.append((time.time(), self._offset))
        self.notify_moved()

    def at_wall(self, wall: float) -> float:
        """The simulated time it was at the wall-clock instant ``wall`` (seconds since the epoch)."""
        with self._lock:
            i = bisect.bisect_right(self._moves, (wall, float("inf")))
            offset = self._moves[i - 1][1] if i else 0.0
        return wall + offset

    def notify_moved(self) -> None:
        """Wake the threads waiting in :meth:`wait_for_move` (time jumped)."""
        with self._moved:
            self._moved.notify_all()

    def wait_for_move(self, timeout: float) -> None:
        """Block until time jumps or ``timeout`` wall seconds pass (wall time moves this clock too)."""
        with self._moved:
            self._moved.wait(timeout)

    @property
    def simulated_seconds(self) -> float:
        """How much time was skipped (beyond wall time)."""
        with self._lock:
            return self._offset
