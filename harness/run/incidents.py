"""Incidents of the families docs/decisions/0023 pages on, injected at random simulated times of the run.

``ops local run --incidents ...`` (``make chaos``) lets the simulated time after the first drain pass as
on AWS (:meth:`harness.stack.pipeline.PipelineRun.advance`: the sweeper's schedule, alarms every minute) and,
at times drawn from the run's seed, starts each incident:

- ``provider_outage``: for :data:`OUTAGE_SECONDS` a provider stand-in answers 503 (its ``provider_unavailable``)
  to every request, while :data:`OUTAGE_ORDERS` orders arrive: the payment provider, then the carrier, in turn
  (each has its own outage alarm).
- ``throttle_sfn``: the account's StateTransition bucket is empty (another workload spent it) until the
  first of :data:`THROTTLE_ORDERS` new executions is throttled (AWS/States ``ExecutionThrottled``).
- ``api_5xx``: the orders queue fails behind the order API (SendMessage answers 500, InternalError), so
  the API answers 5XX to :data:`API_ORDERS` orders; their clients send them again once it recovers.
- ``sweeper_stopped``: the sweeper's schedule skips its runs for one heartbeat window and one interval.

Cheap by design: a few dozen orders per shard and simulated time that costs nothing while idle. Each
incident is reported with when it started and when it became harmful (:func:`Incident.as_report`); the
pager (:mod:`harness.reporting.pager`) requires a page of its family's alarm within a minute of that time.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import botocore.client

from harness.stack.pipeline import PipelineRun
from harness.workload.api_client import OrderApi
from harness.workload.orders import OrderMix, make_orders
from local_cloud.errors import service_error
from local_cloud.faults import FaultCounter
from local_cloud.metrics import metric_key

FAMILIES = ("provider_outage", "sweeper_stopped", "throttle_sfn", "api_5xx")
#: ``--incidents all``: each family once, and a second provider outage (a second incident of a family pages too).
ALL = (*FAMILIES, "provider_outage")
OUTAGE_SECONDS = 90.0
OUTAGE_ORDERS = 16
THROTTLE_ORDERS = 2
API_ORDERS = 3
#: Simulated seconds kept free after a short incident: its rate alarm (1-minute period; an outage alarm clears after
#: five quiet minutes: stacks/order_constructs/steps.py) is back to OK before the next incident of any family starts.
SPACING_SECONDS = 480.0
#: Orders that reach every provider step (the outage must fail charges, not stop at the reservation).
HEALTHY = OrderMix(decline_rate=0.0, ship_fail_rate=0.0, out_of_stock_rate=0.0)


@dataclass
class Incident:
    """One injected incident; times are simulated seconds since the epoch."""

    family: str
    offset: float  # seconds into the span after the first drain
    started_at: float | None = None
    harmful_at: float | None = None  # from then on the pager must announce it
    ended_at: float | None = None
    detail: str = ""  # e.g. which provider went down

    def as_report(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "detail": self.detail,
            "started_at": self.started_at,
            "harmful_at": self.harmful_at,
            "ended_at": self.ended_at,
        }


def parse_incidents(value: str) -> tuple[str, ...]:
    """``all``, or families separated by commas (a family named twice is injected twice)."""
    if value.strip() == "all":
        return ALL
    names = tuple(v.strip() for v in value.split(",") if v.strip())
    unknown = sorted(set(names) - set(FAMILIES))
    if unknown:
        raise ValueError(f"unknown incident families {unknown}: use all or some of {', '.join(FAMILIES)}")
    return names


def plan(families: tuple[str, ...], span: float, stop_seconds: float, rng: random.Random) -> list[Incident]:
    """Random times within ``span``: the short incidents in their own slots in a random order (spaced by
    :data:`SPACING_SECONDS`), the sweeper's stop anywhere it fits after a first scheduled run."""
    short = [f for f in families if f != "sweeper_stopped"]
    slot = span / max(1, len(short))
    incidents = [
        Incident(f, i * slot + rng.uniform(0.0, max(0.0, slot - SPACING_SECONDS)))
        for i, f in enumerate(rng.sample(short, len(short)))
    ]
    for _ in range(families.count("sweeper_stopped")):
        latest = max(360.0, span - stop_seconds - 60.0)
        incidents.append(Incident("sweeper_stopped", rng.uniform(360.0, latest)))
    return sorted(incidents, key=lambda i: i.offset)


#: The stand-ins that go down, in turn, one per outage incident.
PROVIDERS = ("payment", "carrier")
#: A step of each provider (its Powertools service: the dimension of its outage alarm's metrics).
OUTAGE_SERVICE = {"payment": "charge-payment", "carrier": "ship-order"}


class ProviderOutage:
    """The stand-in providers' outage windows (simulated time); the handlers consult it on every request."""

    def __init__(self, counter: FaultCounter) -> None:
        self.counter = counter
        self.windows: list[tuple[str, float, float]] = []  # (provider, start, end)
        self.now: Callable[[], float] | None = None

    def down(self, provider: str) -> bool:
        now = self.now() if self.now else None
        return now is not None and any(p == provider and start <= now < end for p, start, end in self.windows)

    def wrap(self, provider: str, handle: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
        def handler(request: dict[str, Any], ledger: Any) -> dict[str, Any]:
            if self.down(provider):
                self.counter.add("provider_outage")
                return {"status": "error", "error": "provider_unavailable"}  # 503 (sandbox.http_server)
            return handle(request, ledger)

        return handler


@contextmanager
def provider_outages(families: tuple[str, ...], counter: FaultCounter) -> Iterator[ProviderOutage]:
    """Patch the stand-ins' request handlers (before their server starts) when an outage is planned."""
    outage = ProviderOutage(counter)
    if "provider_outage" not in families:
        yield outage
        return
    from sandbox import carrier, payment

    with (
        mock.patch.object(payment, "handle", outage.wrap("payment", payment.handle)),
        mock.patch.object(carrier, "handle", outage.wrap("carrier", carrier.handle)),
    ):
        yield outage


@dataclass
class IncidentRunner:
    """Lets the span after the first drain pass on ``run`` and starts each planned incident on time."""

    run: PipelineRun
    counter: FaultCounter
    outage: ProviderOutage
    seed: int
    incidents: list[Incident] = field(default_factory=list)

    def span(self, seconds: float, families: tuple[str, ...]) -> list[Incident]:
        """Let ``seconds`` pass with the incidents of ``families`` injected; the incidents, as run."""
        start = self.run.clock.now()
        self.incidents = plan(families, seconds, self._stop_seconds(), random.Random(self.seed))
        for n, incident in enumerate(self.incidents):
            self.run.advance(max(0.0, start + incident.offset - self.run.clock.now()))
            getattr(self, f"_{incident.family}")(incident, n)
        self.run.advance(max(0.0, start + seconds - self.run.clock.now()))
        return self.incidents

    def _orders(self, count: int, n: int) -> list[tuple[dict[str, Any], str | None]]:
        return make_orders(count, self.seed * 100 + n, HEALTHY)

    def _stop_seconds(self) -> float:
        if not self.run.schedules.rules:
            return 0.0
        return self._heartbeat_window() + self.run.schedule("Sweeper").interval + 60.0

    def _heartbeat_window(self) -> float:
        alarms = self.run.deployment.alarms.values()
        return next(float(a["Period"]) for a in alarms if a.get("MetricName") == "SweeperRuns")

    def _provider_outage(self, incident: Incident, n: int) -> None:
        now = self.run.clock.now()
        incident.started_at, incident.ended_at = now, now + OUTAGE_SECONDS
        self.outage.now = self.run.clock.now
        provider = incident.detail = PROVIDERS[len(self.outage.windows) % len(PROVIDERS)]
        self.outage.windows.append((provider, now, now + OUTAGE_SECONDS))
        self.run.submit(self._orders(OUTAGE_ORDERS, n))
        self.run.drain()
        incident.harmful_at = self._outage_breached(provider, now, incident.ended_at)

    def _outage_breached(self, provider: str, start: float, end: float) -> float | None:
        """When the outage became one by its alarm's own definition (decisions 0023, 0033: over the last minute, the
        provider's operations failed on their first call - 0.5 x its operations > the threshold): the first datapoint
        of the alarm's custom metrics at which that held. None: it never did (a blip, no incident; it must not page
        either). Whatever the alarm reads (first calls, dependency failures, ``AWS/Lambda`` Invocations)."""
        evaluator = self.run.alarm_evaluator
        evaluator.store.refresh()
        service = OUTAGE_SERVICE[provider]
        for alarm in self.run.deployment.alarms.values():
            metrics = [q["MetricStat"]["Metric"] for q in alarm.get("Metrics", []) if "MetricStat" in q]
            if not any(d["Value"] == service for m in metrics for d in m.get("Dimensions", [])):
                continue
            custom = [m for m in metrics if not m["Namespace"].startswith("AWS/")]
            keys = [metric_key(m["Namespace"], m["MetricName"], m.get("Dimensions", [])) for m in custom]
            times = sorted(t for k in keys for t, _ in evaluator.store.points[k])
            for at in (t for t in times if start <= t <= end + 60.0):
                value = evaluator._period_value(alarm, at - float(alarm["Period"]), at + 1e-6)  # as CloudWatch would
                if value is not None and value > float(alarm["Threshold"]):
                    return at
        return None

    def _sweeper_stopped(self, incident: Incident, n: int) -> None:
        rule = self.run.schedule("Sweeper")
        now = self.run.clock.now()
        last = rule.fired[-1] if rule.fired else now
        incident.started_at, incident.ended_at = now, now + self._stop_seconds()
        incident.harmful_at = last + self._heartbeat_window()  # a whole heartbeat window without a run
        self.run.pause_schedule("Sweeper", now, incident.ended_at)
        self.counter.add("sweeper_stopped")

    def _throttle_sfn(self, incident: Incident, n: int) -> None:
        limits = self.run.limits
        bucket, refill = limits.transition_bucket, limits.transition_bucket.refill
        before = limits.throttles["stepfunctions:StateTransition"]
        incident.started_at = incident.harmful_at = self.run.clock.now()
        bucket.refill = 0.0
        bucket.take(bucket.tokens)
        try:
            self.run.submit(self._orders(THROTTLE_ORDERS, n))
            deadline = time.monotonic() + 30.0
            while limits.throttles["stepfunctions:StateTransition"] == before and time.monotonic() < deadline:
                if not self.run.deliver():
                    time.sleep(0.01)
        finally:
            bucket.refill = refill
        incident.ended_at = self.run.clock.now()
        self.counter.add("throttle_sfn")
        self.run.drain()

    def _api_5xx(self, incident: Incident, n: int) -> None:
        if self.run.api_url is None:
            raise RuntimeError("the api_5xx incident needs the order API served (serve_api)")
        api = OrderApi(self.run.api_url)
        orders = self._orders(API_ORDERS, n)
        incident.started_at = incident.harmful_at = self.run.clock.now()
        with _orders_queue_failing(self.run.producer.queue_url.rsplit("/", 1)[-1]):
            for order, cid in orders:
                answer = api.request("POST", "/orders", _body(order), _headers(order, cid))
                if answer.status >= 500:
                    self.counter.add("api_5xx")
        incident.ended_at = self.run.clock.now()
        for order, cid in orders:  # the clients retry once the API recovers
            api.post_order(_body(order).decode(), cid)
        self.run.submitted.extend(orders)
        self.run.drain()


def _body(order: dict[str, Any]) -> bytes:
    import json

    return json.dumps(order).encode("utf-8")


def _headers(order: dict[str, Any], cid: str | None) -> dict[str, str]:
    from harness.workload.api_client import idempotency_key

    headers = {"Idempotency-Key": idempotency_key(_body(order).decode())}
    if cid:
        headers["X-Correlation-Id"] = cid
    return headers


@contextmanager
def _orders_queue_failing(queue_name: str) -> Iterator[None]:
    """SendMessage to the orders queue answers 500 InternalError (an SQS failure behind the API):
    https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/CommonErrors.html."""
    original = botocore.client.BaseClient._make_api_call

    def call(client: Any, operation: str, params: dict[str, Any]) -> Any:
        if operation == "SendMessage" and str(params.get("QueueUrl", "")).rsplit("/", 1)[-1] == queue_name:
            raise service_error(client, operation, "InternalError", "Injected incident: the queue failed", 500)
        return original(client, operation, params)

    with mock.patch.object(botocore.client.BaseClient, "_make_api_call", call):
        yield
