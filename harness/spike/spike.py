"""``ops local spike``: the seeds' Black Friday (50/min, then 50,000/min for 5 minutes) on the local run.

Similitude: a scale factor k divides every arrival rate and every rate or concurrency quota
together (token buckets, refills, Lambda concurrency, the event source mapping's ramp and caps),
while time is unchanged; a 1:k run has the queue-depth shape of the real day divided by k, and
the same backlog durations and latencies. Payload limits are not scaled.

Time: a :class:`SteppedClock` that only the loop moves, one tick (1 s) at a time; SQS (moto)
reads it too, so visibility timeouts and ``DelaySeconds`` run in simulated time. Waits inside a
tick (botocore's retry backoff, Step Functions ``Retry``) take no simulated time. A Standard
execution takes a StateTransition token for every state it enters and, when the bucket is empty,
waits for the clock to refill it (AWS slows a throttled execution, it does not fail it), so the
saga's duration under the spike is modelled by the transition quota; latency is from send to the
end of the order's execution (its terminal status is the execution's last write). The event
source mapping's concurrency follows AWS's ramp; each batch is assumed to take ``batch_seconds``
(1 s), so concurrency c polls c batches a second. Lambda concurrency is modelled by that
mapping's concurrency, not per in-process invocation (the functions' wall-clock overlap means
nothing on a stepped clock).
"""

from __future__ import annotations

import json
import math
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

from harness.reporting.lost_sales import check_lost_sales, unpaged_lost_sales
from harness.reporting.report import TERMINAL, order_statuses
from harness.reporting.reporter import body_order_id
from harness.reporting.reporter import dlq_contents as _dlq_contents
from harness.stack.options import RunOptions
from harness.stack.pipeline import PipelineRun, deployed_pipeline
from harness.stack.synth import REPO_ROOT, load_assembly, synthesize
from harness.workload.orders import OrderMix, make_orders
from local_cloud.clock import SimClock
from local_cloud.environment import local_aws
from local_cloud.limits import Quotas, esm_concurrency
from local_cloud.template import CloudAssembly
from ops.errors import UsageError

DEFAULT_PLOT = REPO_ROOT / "reports" / "spike.png"
UNITS = {"s": 1.0, "sec": 1.0, "second": 1.0, "min": 60.0, "minute": 60.0, "h": 3600.0, "hour": 3600.0}


def parse_rate(text: str) -> float:
    """``50/min``, ``833/s``, ``3000/h`` -> orders per second."""
    count, sep, unit = str(text).partition("/")
    try:
        value = float(count)
    except ValueError:
        raise UsageError(f"rate {text!r}: expected N/min, N/s or N/h") from None
    if not sep or unit.strip() not in UNITS or not math.isfinite(value) or value < 0:
        raise UsageError(f"rate {text!r}: expected N/min, N/s or N/h")
    return value / UNITS[unit.strip()]


#: Before the clock moves, executions that are running a state (not waiting for a StateTransition
#: token) get up to this much wall time to reach their next wait or their end. It is a guard
#: against a hung execution only: a loaded machine (CI's two test workers) can take seconds for a
#: tick's states, and a shorter bound let simulated time run ahead of them (every latency and the
#: drain then measured the machine's load). A tick that hits it is counted (``settle_timeouts``).
SETTLE_MAX_SECONDS = 120.0
SETTLE_POLL_SECONDS = 0.001


class SteppedClock(SimClock):
    """Simulated time moved only by :meth:`step`; ``advance`` (a retry's sleep) takes no time."""

    def __init__(self, start: float | None = None) -> None:
        super().__init__()
        self._start = time.time() if start is None else start
        self._t = self._start
        self._step_lock = threading.Lock()

    def now(self) -> float:
        return self._t

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("time only moves forward")

    def sleep(self, seconds: float) -> None:
        """A wait inside a tick (a Retry's, an execution's too) takes no simulated time here."""
        self.advance(seconds)

    def step(self, seconds: float) -> None:
        with self._step_lock:
            self._t += seconds
        self.notify_moved()

    @property
    def simulated_seconds(self) -> float:
        return self._t - self._start


@dataclass(frozen=True)
class SpikeOptions:
    baseline_per_second: float = 50 / 60
    peak_per_second: float = 50_000 / 60
    minutes: float = 5.0
    scale: float = 100.0
    quotas: Quotas = field(default_factory=Quotas)  # unscaled (1:1); the run divides by ``scale``
    warmup_seconds: float = 60.0
    tick_seconds: float = 1.0
    batch_seconds: float = 1.0
    seed: int = 11
    max_simulated_seconds: float = 4 * 3600.0
    throttle_backoff: bool = True  # False: today's behaviour (context intake_throttle_backoff=false)
    assembly_dir: Path | None = None
    plot: Path | None = DEFAULT_PLOT
    timeout_seconds: float = 1800.0


@dataclass
class Sample:
    t: float
    depth: int
    started: int
    throttles: int
    finished: int

    @property
    def in_flight(self) -> int:
        return self.started - self.finished


def spike_assembly(options: SpikeOptions) -> CloudAssembly:
    """The synthesized app, with or without the throttle backoff (its own cdk.out per variant)."""
    if options.assembly_dir:
        return CloudAssembly(options.assembly_dir, "OrderPipeline-dev")
    variant = "backoff" if options.throttle_backoff else "today"
    with mock.patch.dict("os.environ", {"AWS_DEFAULT_REGION": "us-east-1"}):
        return synthesize(
            REPO_ROOT / ".build" / f"spike.{variant}.out",
            "dev",
            {"intake_throttle_backoff": options.throttle_backoff},
        )


class SpikeDriver:
    """The tick loop: arrivals, the event source mapping's ramp, samples."""

    def __init__(self, run: PipelineRun, options: SpikeOptions, clock: SteppedClock) -> None:
        self.run, self.options, self.clock = run, options, clock
        self.t0 = clock.now()
        self.peak_end = options.warmup_seconds + options.minutes * 60
        expected = options.peak_per_second * options.minutes * 60 + options.baseline_per_second * (
            options.warmup_seconds + options.max_simulated_seconds
        )
        self.orders = make_orders(max(1, math.ceil(expected) + 1), options.seed, OrderMix())
        self.sent_at: dict[str, float] = {}
        self.samples: list[Sample] = []
        self._owed = 0.0
        self._budget = 0.0
        self._scaling_since: float | None = None
        self.settle_timeouts = 0
        poller = run.pollers[0]
        self.poller = poller
        self.quotas = run.limits.quotas
        self.max_concurrency = (poller.spec.max_concurrency or None) and poller.spec.max_concurrency / options.scale
        reserved = run.limits.reserved.get(poller.spec.function.name)
        self.reserved = reserved / options.scale if reserved is not None else None

    def rate(self, t: float) -> float:
        peak = self.options.warmup_seconds <= t < self.peak_end
        return self.options.peak_per_second if peak else self.options.baseline_per_second

    def arrivals(self, t: float) -> None:
        self._owed += self.rate(t) / self.options.scale * self.options.tick_seconds
        n = int(self._owed)
        if n <= 0:
            return
        self._owed -= n
        start = len(self.sent_at)
        batch = self.orders[start : start + n]
        now = self.clock.now()
        for order, _ in batch:
            self.sent_at[order["order_id"]] = now
        self.run.submitted.extend(batch)
        self.run.submit_messages([(json.dumps(o), cid) for o, cid in batch])

    def concurrency(self, t: float, waiting: bool) -> float:
        """Concurrent batches the event source mapping runs now (its ramp, caps and the function's)."""
        if not waiting:
            self._scaling_since = None
            return esm_concurrency(self.quotas, 0.0, self.max_concurrency)
        if self._scaling_since is None:
            self._scaling_since = t
        c = esm_concurrency(self.quotas, t - self._scaling_since, self.max_concurrency)
        if self.reserved is not None:
            c = min(c, self.reserved)
        return min(c, self.quotas.lambda_concurrency)

    def poll(self, t: float) -> None:
        waiting = self.poller.queue_depth() > 0
        per_tick = self.concurrency(t, waiting) * self.options.tick_seconds / self.options.batch_seconds
        self._budget = min(self._budget + per_tick, max(1.0, per_tick))
        while self._budget >= 1.0:
            if not self.poller.poll_once():
                self._budget = 0.0
                break
            self._budget -= 1.0

    def tick(self) -> Sample:
        t = self.clock.now() - self.t0
        self.arrivals(t)
        self.poller.release_due()
        self.poll(t)
        sample = Sample(
            t=t,
            depth=self.poller.queue_depth(),
            started=len(self.run.limits.started),
            throttles=sum(self.run.limits.throttles.values()),
            finished=len(self.run.limits.finished),
        )
        self.samples.append(sample)
        self.settle()
        self.clock.step(self.options.tick_seconds)
        return sample

    def settle(self) -> None:
        """Let every execution that can run within this tick run, so that simulated time never
        runs ahead of the executions (a discrete-event step: the clock moves when all wait)."""
        deadline = time.monotonic() + SETTLE_MAX_SECONDS
        while self.run.limits.runnable_executions() > 0:
            if time.monotonic() > deadline:
                self.settle_timeouts += 1
                return
            time.sleep(SETTLE_POLL_SECONDS)

    def loop(self) -> None:
        deadline = time.monotonic() + self.options.timeout_seconds
        while True:
            sample = self.tick()
            drained = sample.t >= self.peak_end and sample.depth == 0 and self.poller.next_visible_at() is None
            # drained: nothing visible, in flight, delayed or waiting out a visibility timeout; and
            # every started execution has ended (throttled transitions need the clock to move).
            if drained and sample.in_flight <= 0 and not self.run.running_executions():
                break
            if sample.t > self.options.max_simulated_seconds or time.monotonic() > deadline:
                break


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def spike_report(driver: SpikeDriver, wall_seconds: float) -> dict[str, Any]:
    """The figures, measured and scaled back to 1:1."""
    run, options, k = driver.run, driver.options, driver.options.scale
    counts, details = run.order_summary()
    statuses = order_statuses(run.orders_table)
    finished = run.limits.finished
    latencies = [
        finished[f"order-{oid}-attempt-1"] - sent
        for oid, sent in driver.sent_at.items()
        if f"order-{oid}-attempt-1" in finished and statuses.get(oid, {}).get("status") in TERMINAL
    ]
    _, dlq_messages = _dlq_contents(run)
    dead = {body_order_id(m.body) for _, m in dlq_messages} & set(driver.sent_at)
    ledger = run.report(wall_seconds)["ledger"]
    side_effects = {
        key: ledger[key]
        for key in ("charges", "duplicate_charges", "shipments", "duplicate_shipments", "refunds", "duplicate_refunds")
    }
    backlog = _backlog(driver)
    max_depth = backlog["max_depth"]
    throttles = dict(run.limits.throttles)
    return {
        "scale": k,
        "rates_per_minute": {
            "baseline": round(options.baseline_per_second * 60, 3),
            "peak": round(options.peak_per_second * 60, 3),
            "measured_peak": round(options.peak_per_second * 60 / k, 3),
        },
        "minutes": options.minutes,
        "throttle_backoff": options.throttle_backoff,
        "quotas_measured": {k_: round(v, 3) for k_, v in vars(run.limits.quotas).items()},
        "orders": counts,
        "side_effects": side_effects,
        "valid_orders_dead_lettered": len(dead),
        "lost_sales": unpaged_lost_sales(run.submitted, details, run.state_machine_arn),  # it evaluates no alarm
        "throttles": throttles,
        "backlog": backlog,
        "latency_seconds": _p50_p99(latencies),
        "scaled_to_1_1": {
            "orders_submitted": counts["submitted"] * k,
            "valid_orders_dead_lettered": len(dead) * k,
            "throttles": {name: n * k for name, n in throttles.items()},
            "backlog": {**backlog, "max_depth": max_depth * k},
            "latency_seconds": "unchanged by similitude (time is not scaled)",
        },
        "not_terminal": [d["order_id"] for d in details if d["status"] not in TERMINAL],
        "elapsed": {"wall_seconds": round(wall_seconds, 1), "simulated_seconds": round(driver.samples[-1].t, 1)},
        "executions": {
            "max_in_flight": max((s.in_flight for s in driver.samples), default=0),
            "state_transitions": run.limits.transitions,
            "settle_timeouts": driver.settle_timeouts,
            "all_terminal_after_seconds": _all_terminal_after(driver),
        },
        "series": [[s.t, s.depth, s.started, s.throttles, s.finished] for s in driver.samples],
    }


def _backlog(driver: SpikeDriver) -> dict[str, Any]:
    """The queue's backlog over the run: its maximum depth, oldest message's age, and when it drained."""
    depth = [s.depth for s in driver.samples]
    max_depth = max(depth, default=0)
    drained = next(
        (s.t for s in driver.samples if s.t >= driver.peak_end and s.depth == 0),
        None,
    )
    oldest = _oldest_ages(driver)
    return {
        "max_depth": max_depth,
        "max_oldest_age_seconds": round(max(oldest, default=0.0), 1),
        "drained_after_seconds": round(drained - driver.peak_end, 1) if drained is not None else None,
    }


def _p50_p99(latencies: list[float]) -> dict[str, float | None]:
    """The latencies' median and 99th percentile (s, one decimal), None without any."""
    p50, p99 = percentile(latencies, 0.5), percentile(latencies, 0.99)
    return {
        "p50": round(p50, 1) if p50 is not None else None,
        "p99": round(p99, 1) if p99 is not None else None,
    }


def _all_terminal_after(driver: SpikeDriver) -> float | None:
    """Seconds after the peak when the last of the run's executions ended (None: one never did)."""
    finished = driver.run.limits.finished
    if not finished or len(finished) < len(driver.run.limits.started):
        return None
    return round(max(finished.values()) - driver.t0 - driver.peak_end, 1)


def _oldest_ages(driver: SpikeDriver) -> list[float]:
    """Per sample, the age of the oldest sent order whose saga had not started (approximately the
    queue's ApproximateAgeOfOldestMessage)."""
    started = driver.run.limits.started
    start_of = {oid: started.get(f"order-{oid}-attempt-1", math.inf) for oid in driver.sent_at}
    ages = []
    for sample in driver.samples:
        now = driver.t0 + sample.t
        waiting = [now - sent for oid, sent in driver.sent_at.items() if sent <= now and start_of[oid] > now]
        ages.append(max(waiting, default=0.0))
    return ages


def check_spike(report: dict[str, Any]) -> list[str]:
    """What ``--check`` refuses: an order not terminal, a valid order dead-lettered, a duplicate side effect."""
    problems = []
    if report["not_terminal"] or report["orders"]["in_flight"] or report["orders"]["failed"]:
        problems.append(f"{len(report['not_terminal'])} orders not terminal")
    if report["valid_orders_dead_lettered"]:
        problems.append(f"{report['valid_orders_dead_lettered']} valid orders dead-lettered")
    if lost := check_lost_sales(report):
        problems.append(lost)
    duplicates = {k: v for k, v in report["side_effects"].items() if k.startswith("duplicate_") and v}
    if duplicates:
        problems.append(f"duplicate side effects: {duplicates}")
    return problems


def run_spike(options: SpikeOptions) -> dict[str, Any]:
    """Deploy, run the spike on the stepped clock, report (and plot)."""
    started = time.monotonic()
    assembly = spike_assembly(options)
    clock = SteppedClock()
    run_options = RunOptions(
        orders=1,
        scheduled_targets=(),  # the spike judges throughput on its stepped clock; no schedule runs in it
        quotas=options.quotas.scaled(options.scale),
        lambda_concurrency_check=False,  # modelled by the mapping's concurrency (see module doc)
        timeout_seconds=options.timeout_seconds,
    )
    with local_aws(clock), deployed_pipeline(assembly, run_options, clock) as run:
        driver = SpikeDriver(run, options, clock)
        driver.loop()
        report = spike_report(driver, time.monotonic() - started)
    report["check_problems"] = check_spike(report)
    if options.plot is not None:
        from harness.spike.spike_plot import plot_spike

        plot_spike(report, options.plot)
        report["plot"] = str(options.plot)
    return report


__all__ = ["SpikeOptions", "check_spike", "load_assembly", "parse_rate", "run_spike"]
