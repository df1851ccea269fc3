"""Simulated time for the local run: visibility timeouts pass without waiting for them, and machine load
does not bend it.

Simulated time is :class:`WorkTime` (wall time minus the time this process was starved: runnable but
not running, as Linux's scheduler statistics count it) plus an offset the runner advances when nothing
else can progress. On a quiet machine it runs with the wall clock; on a loaded one it slows down with the
process, so as many calls happen per simulated minute alone or loaded; an idle process (everything
waiting) still sees it move with the wall clock, so nothing that waits for simulated time deadlocks.
"""

from __future__ import annotations

import bisect
import os
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

#: Wall seconds between two readings of the scheduler statistics (the rate of simulated time is
#: corrected at each; the error between two is at most this times the change in load).
SAMPLE_SECONDS = 0.05
#: ``/proc/<pid>/task/<tid>/schedstat``: "time spent on the cpu, time spent waiting on a runqueue,
#: # of timeslices run on this cpu" (https://docs.kernel.org/scheduler/sched-stats.html, version 15+).
TASKS_DIR = "/proc/self/task"
#: A scan of the threads' statistics takes at most this share of the wall time between two: the interval
#: grows with the scan (a shard runs about 100 threads, up to 1,000 at once in a large run).
SCAN_COST_RATIO = 100
#: How far past its turn a line runs before the sampler turns it again: a sampler starved for longer
#: (the whole process is) stops the clock there instead of letting it run on at a stale rate.
HORIZON_SECONDS = 0.25
#: ... and at least this many sampling intervals (the interval grows with the scan's cost).
HORIZON_INTERVALS = 5
#: Lines kept for :meth:`WorkTime.at_wall` (10 minutes of turns): moto's wall-clock stamps are read within
#: a simulated minute or two; a run of hours (``ops local up``) must not keep every turn (about 16 MB an hour).
HISTORY_LINES = int(600 / SAMPLE_SECONDS)
#: Added at each turn: float rounding at epoch magnitudes (one ulp is 0.24 us) never turns it back.
TURN_NUDGE_SECONDS = 1e-6


class RunDelays:
    """Nanoseconds each thread of this process has run on a CPU and waited on a runqueue; {} off Linux.

    Each thread's file stays open and is read again at offset 0 (the kernel regenerates it): opening,
    reading and closing about 100 files (the threads of a chaos shard) 20 times a second took 6.5% of
    the shard's CPU. A file whose thread ended reads as an error and is closed."""

    def __init__(self) -> None:
        self._fds: dict[int, int] = {}

    def read(self, exclude: int) -> dict[int, tuple[int, int]]:
        """Each thread's (time on a CPU, time waiting on a runqueue), but ``exclude``'s (the sampler's)."""
        delays: dict[int, tuple[int, int]] = {}
        try:
            tids = os.listdir(TASKS_DIR)
        except OSError:
            return delays
        for name in tids:
            tid = int(name)
            if tid == exclude:
                continue
            fd = self._fds.get(tid)
            try:
                if fd is None:
                    fd = self._fds[tid] = os.open(f"{TASKS_DIR}/{name}/schedstat", os.O_RDONLY)
                on_cpu, waited = os.pread(fd, 128, 0).split()[:2]
                delays[tid] = (int(on_cpu), int(waited))
            except (OSError, IndexError, ValueError):
                self._close(tid)  # the thread ended meanwhile (or its id was reused: reopened next time)
        for tid in [t for t in self._fds if t not in delays]:
            self._close(tid)
        return delays

    def _close(self, tid: int) -> None:
        fd = self._fds.pop(tid, None)
        if fd is not None:
            os.close(fd)


class WorkTime:
    """Wall time minus the time this process was starved (a thread runnable and not running), as a
    continuous, non-decreasing function of wall time: a line ``value + (wall - wall0) * rate`` whose
    rate a sampler thread sets every :data:`SAMPLE_SECONDS` from the threads' run delays.

    Why hand-written: no library offers a clock that discounts scheduler starvation; the kernel's
    per-thread ``run_delay`` is the measure (process CPU time alone cannot tell starved from idle).
    The sampler's own delays are not counted (it is not the work). One per process (:func:`work_time`).
    """

    def __init__(self) -> None:
        #: The wall clock as it was at import: a test that fakes ``time.time`` does not turn this line.
        self.wall_clock = time.time
        wall = self.wall_clock()
        #: (wall0, value at wall0, rate, the most it reaches before the next turn): replaced whole, read
        #: without a lock.
        self._line: tuple[float, ...] = (wall, wall, 1.0, wall + HORIZON_SECONDS)
        self._walls: list[float] = [wall]
        self._lines: list[tuple[float, ...]] = [self._line]
        self._trimmed = False  # whether the oldest lines were dropped (HISTORY_LINES)
        self._starved = 0.0
        self._lock = threading.Lock()
        self._pid = 0
        self._stop = threading.Event()
        self._interval = SAMPLE_SECONDS  # wall seconds between two samples (longer while scans are long)
        self.samples = 0

    def now(self) -> float:
        wall = self.wall_clock()  # before the line (see _turned)
        wall0, value, rate, cap = self._line
        if wall <= wall0:
            return value
        now = value + (wall - wall0) * rate
        return now if now < cap else cap

    def at_wall(self, wall: float) -> float:
        """The value this clock had at the wall-clock instant ``wall``."""
        with self._lock:
            i = bisect.bisect_right(self._walls, wall) - 1
            wall0, value, rate, cap = self._lines[max(0, i)]
            if i < 0 and self._trimmed:  # older than the kept lines: at the wall clock's rate
                return value - (wall0 - wall)
        return min(cap, value + max(0.0, wall - wall0) * rate)

    @property
    def starved_seconds(self) -> float:
        """Wall seconds not counted as work since the sampler started (starved, or lost to its lag)."""
        return self._starved

    def ensure_sampling(self) -> None:
        """Start the sampler thread in this process (again after a fork) if it is not running."""
        with self._lock:
            if self._pid == os.getpid():
                return
            self._pid = os.getpid()
        threading.Thread(target=self._sample_forever, name="work-time-sampler", daemon=True).start()

    def forked(self) -> None:
        """In a forked child (no sampler thread there): run with the wall clock, continuously, until
        :meth:`ensure_sampling` starts the child's own sampler."""
        wall = self.wall_clock()
        value = self.now()
        self._line = (wall, value, 1.0, float("inf"))
        self._lock = threading.Lock()
        self._pid = 0

    def _sample_forever(self) -> None:
        me, run_delays = threading.get_native_id(), RunDelays()
        last_wall, last = self.wall_clock(), run_delays.read(me)
        while not self._stop.wait(self._interval):
            cpu, wall, delays = time.thread_time(), self.wall_clock(), run_delays.read(me)
            # Many threads make a scan longer: sample less often, so the sampler stays a small cost (its
            # own CPU time: a starved scan must not make the clock coarser when load needs it finest).
            self._interval = max(SAMPLE_SECONDS, SCAN_COST_RATIO * (time.thread_time() - cpu))
            elapsed = wall - last_wall
            # A thread born since the last sample ran and waited all its times within the interval.
            ran_ns = waited_ns = 0
            for tid, (on_cpu, delay) in delays.items():
                on_cpu0, delay0 = last.get(tid, (0, 0))
                ran_ns += max(0, on_cpu - on_cpu0)
                waited_ns += max(0, delay - delay0)
            ran, waited = ran_ns / 1e9, waited_ns / 1e9
            # Starved: runnable, and none of its threads running. Threads waiting while another of them
            # runs take turns, as with the GIL (a process pinned to one CPU): that is work.
            starved = min(max(0.0, waited), max(0.0, elapsed - ran))
            self._starved += starved
            last_wall, last = wall, delays
            self._set_rate(wall, 1.0 - starved / elapsed if elapsed > 0 else 1.0)

    def _set_rate(self, wall: float, share: float) -> None:
        """Turn the line towards the work time (wall - starved), continuously and never backwards: at the
        last interval's share of running time, slower while it is ahead of the work, never faster than the
        wall clock (a line behind the work, the sampler's lag, is forgiven rather than raced)."""
        with self._lock:
            wall0, value, rate, cap = self._line
            at = min(cap, value + (wall - wall0) * rate)
            self._starved = max(self._starved, wall - at)  # behind the work: forgive, never catch up
            ahead = at - (wall - self._starved)
            new_rate = min(1.0, max(0.0, share - ahead / self._interval))
            line = self._turned(wall0, value, rate, cap, new_rate)
            self._line = line
            self._walls.append(line[0])
            self._lines.append(line)
            if len(self._lines) > HISTORY_LINES:
                del self._walls[: HISTORY_LINES // 2], self._lines[: HISTORY_LINES // 2]
                self._trimmed = True
            self.samples += 1

    def _turned(self, wall0: float, value: float, rate: float, cap: float, new_rate: float) -> tuple[float, ...]:
        """The new line: it starts now, where the old one is, and stands at that value before it (a reader
        whose wall time predates the turn). A reader preempted between its two reads can still compute
        a little less than it read before: :meth:`SimClock.now` never answers less than its last answer."""
        turn = max(self.wall_clock(), self._walls[-1])
        start = min(cap, value + (turn - wall0) * rate) + TURN_NUDGE_SECONDS
        horizon = max(HORIZON_SECONDS, HORIZON_INTERVALS * self._interval)
        return (turn, start, new_rate, start + horizon * new_rate)


class WallTime:
    """The wall clock, with :class:`WorkTime`'s interface: a :class:`SimClock` that ignores machine load
    (a test that fakes the wall clock, or a caller that wants the old behaviour)."""

    _line = (0.0, 0.0, 1.0, float("inf"))

    @staticmethod
    def wall_clock() -> float:
        return time.time()  # looked up at each call: a test may fake it

    def now(self) -> float:
        return self.wall_clock()

    def at_wall(self, wall: float) -> float:
        return wall


_WORK_TIME = WorkTime()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_WORK_TIME.forked)


def work_time() -> WorkTime:
    """This process's :class:`WorkTime`, its sampler running."""
    _WORK_TIME.ensure_sampling()
    return _WORK_TIME


_acting = threading.local()


@contextmanager
def acting_for(execution: str) -> Iterator[None]:
    """While active, the calling thread acts for ``execution`` (a Step Functions execution's thread): its
    :meth:`SimClock.sleep` waits for the simulated time it needs instead of advancing the shared clock
    Nests; the previous value is restored on exit."""
    previous = getattr(_acting, "execution", None)
    _acting.execution = execution
    try:
        yield
    finally:
        _acting.execution = previous


def acting_execution() -> str | None:
    """The execution the calling thread acts for (:func:`acting_for`), if any."""
    return getattr(_acting, "execution", None)


class SimClock:
    """Work time (:class:`WorkTime`: wall time, less what machine load took from this process) plus an
    offset that the runner advances when nothing else can progress.

    Time a thread must let pass (a Retry wait, a crashed invocation's timeout, a retry backoff) is
    :meth:`sleep`: a thread acting for an execution waits until the clock reaches its own target, so
    executions waiting at once wait together, as on AWS; the runner, once every running execution waits
    (:meth:`earliest_wait`), steps the clock to the earliest target. Any other thread advances the clock."""

    def __init__(self, work: WorkTime | WallTime | None = None) -> None:
        self._work = work if work is not None else work_time()
        self._wall = self._work.wall_clock
        self._offset = 0.0
        self._last = 0.0  # the last time now() answered
        #: (wall time of each advance, the offset from then on): what the simulated time was at a past
        #: wall-clock instant (moto stamps some dates, e.g. an execution's stopDate, with the wall clock).
        self._moves: list[tuple[float, float]] = []
        self._lock = threading.Lock()
        self._moved = threading.Condition()
        #: The waits in progress: a token -> (target simulated time, the execution it is for).
        self._waits: dict[int, tuple[float, str]] = {}
        self._wait_tokens = 0
        #: Bumped when a wait begins or an execution ends (:meth:`notify_waits`); the runner blocks on it.
        self._generation = 0
        self._waits_changed = threading.Condition()

    def now(self) -> float:
        # No lock: reading a tuple and a float attribute is atomic, and moto's SQS asks for the time
        # once per message per queue scan (about 200,000 times in a 100-order chaos run).
        wall = self._wall()  # before the line (see WorkTime._turned)
        wall0, value, rate, cap = self._work._line
        now = value + (wall - wall0) * rate if wall > wall0 else value
        now = (now if now < cap else cap) + self._offset
        # A reader preempted for longer than a turn's guard between its two reads could compute less
        # than another read before: never answer less than the last answer (without a lock: a lost
        # update only weakens this last guard).
        last = self._last
        if now < last:
            return last
        self._last = now
        return now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("time only moves forward")
        with self._lock:
            self._offset += seconds
            self._moves.append((self._wall(), self._offset))
        self.notify_moved()

    def at_wall(self, wall: float) -> float:
        """The simulated time it was at the wall-clock instant ``wall`` (seconds since the epoch)."""
        with self._lock:
            i = bisect.bisect_right(self._moves, (wall, float("inf")))
            offset = self._moves[i - 1][1] if i else 0.0
        return self._work.at_wall(wall) + offset

    def notify_moved(self) -> None:
        """Wake the threads waiting in :meth:`wait_for_move` (time jumped)."""
        with self._moved:
            self._moved.notify_all()

    def wait_for_move(self, timeout: float) -> None:
        """Block until time jumps or ``timeout`` wall seconds pass (an idle process's clock moves with
        the wall clock too)."""
        with self._moved:
            self._moved.wait(timeout)

    @property
    def simulated_seconds(self) -> float:
        """How much time was skipped (beyond the process's work time)."""
        with self._lock:
            return self._offset

    # -- per-execution waits ---------------------------------------------------------------------------
    def sleep(self, seconds: float) -> None:
        """Let ``seconds`` of simulated time pass for the calling thread. A thread acting for an execution
        (:func:`acting_for`) waits until the clock reaches ``now + seconds``: other executions' time passes
        with its own, as on AWS. Any other thread (the runner's: nothing else would move the clock for it)
        advances the clock."""
        execution = acting_execution()
        if execution is None:
            self.advance(seconds)
        else:
            self.wait_until(self.now() + seconds, execution)

    def wait_until(self, target: float, execution: str) -> None:
        """Block until simulated time reaches ``target``, registered as a wait of ``execution``. Simulated
        time runs with work time (never faster than the wall clock), so a wait nobody steps ends by itself
        in about its length of wall time: a runner that misses it costs speed, never a deadlock."""
        with self._waits_changed:
            self._wait_tokens += 1
            token = self._wait_tokens
            self._waits[token] = (target, execution)
            self._generation += 1
            self._waits_changed.notify_all()
        try:
            with self._moved:  # advance() notifies under this lock: no wake-up is lost between check and wait
                while (now := self.now()) < target:
                    self._moved.wait(target - now)
        finally:
            with self._waits_changed:
                del self._waits[token]

    def earliest_wait(self, running: Iterable[str]) -> float | None:
        """When each of the ``running`` executions waits for simulated time (a wait not yet over), the
        earliest end among their waits: only moving the clock lets any of them on. None when one of them
        does not wait (it works: moving the clock would take simulated time from it) or none runs."""
        now = self.now()
        with self._waits_changed:
            pending: dict[str, float] = {}
            for target, execution in self._waits.values():
                if target > now and target < pending.get(execution, float("inf")):
                    pending[execution] = target
        targets = []
        for execution in running:
            ends = pending.get(execution)
            if ends is None:
                return None
            targets.append(ends)
        return min(targets) if targets else None

    @property
    def waits_generation(self) -> int:
        """A counter bumped when a wait begins or an execution ends (see :meth:`wait_for_waits`)."""
        return self._generation

    def notify_waits(self) -> None:
        """Wake the runner blocked in :meth:`wait_for_waits` (an execution ended)."""
        with self._waits_changed:
            self._generation += 1
            self._waits_changed.notify_all()

    def wait_for_waits(self, seen: int, timeout: float) -> None:
        """Block until a wait begins or an execution ends after :attr:`waits_generation` read ``seen``, or
        ``timeout`` wall seconds pass."""
        with self._waits_changed:
            self._waits_changed.wait_for(lambda: self._generation != seen, timeout)
