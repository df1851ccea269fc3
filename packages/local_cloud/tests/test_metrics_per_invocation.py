"""local_cloud.powertools_state: each invocation's Powertools metrics are its own, as in its own execution
environment on AWS.

Powertools keeps every Metrics instance's metrics and dimensions in dicts shared at class level. The emulator
runs concurrent invocations of every function in one process: one function's flush emitted another's
ExpectedErrors under its own ``service`` (a 2,000-order business-only run paged ReserveInventory's and ShipOrder's
``Errors - ExpectedErrors`` alarms three times).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import nullcontext
from typing import Any

import pytest

from local_cloud.capture import LineCapture, capture_stdout
from local_cloud.powertools_state import invocation_scope, metrics_per_invocation


def _two_invocations(isolated: bool) -> list[dict[str, Any]]:
    """Reserve adds ExpectedErrors and, before it flushes, Charge adds its own metric and flushes."""
    from aws_lambda_powertools import Metrics

    capture = LineCapture()
    added, flushed = threading.Event(), threading.Event()
    with metrics_per_invocation() if isolated else nullcontext(), capture_stdout(capture):
        reserve = Metrics(namespace="Orders", service="reserve-inventory")
        charge = Metrics(namespace="Orders", service="charge-payment")

        def reserve_invocation() -> None:
            with invocation_scope():
                reserve_body()

        def reserve_body() -> None:
            reserve.add_metric(name="ExpectedErrors", unit="Count", value=1)
            added.set()
            flushed.wait(5)
            reserve.flush_metrics()

        def charge_invocation() -> None:
            with invocation_scope():
                charge_body()

        def charge_body() -> None:
            added.wait(5)
            charge.add_metric(name="ChargesCaptured", unit="Count", value=1)
            charge.flush_metrics()
            flushed.set()

        threads = [threading.Thread(target=reserve_invocation), threading.Thread(target=charge_invocation)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
    return [json.loads(line) for line in capture.lines if '"_aws"' in line]


@pytest.fixture(autouse=True)
def _no_leftovers() -> Iterator[None]:
    from aws_lambda_powertools.metrics.metrics import Metrics

    yield
    for shared in (Metrics._metrics, Metrics._dimensions, Metrics._metadata):
        shared.clear()


def test_metrics_per_invocation_each_flush_emits_only_its_own_metrics() -> None:
    docs = _two_invocations(isolated=True)
    by_service = {d["service"]: sorted(k for k in d if k not in ("_aws", "service")) for d in docs}
    assert by_service == {"charge-payment": ["ChargesCaptured"], "reserve-inventory": ["ExpectedErrors"]}


def test_metrics_per_invocation_shared_state_misattributes_without_it() -> None:
    """What Powertools does in one process without the patch: Reserve's ExpectedErrors leaves under Charge's flush."""
    docs = _two_invocations(isolated=False)
    assert [d["service"] for d in docs if "ExpectedErrors" in d] == ["charge-payment"]


def test_metrics_per_invocation_record_workers_share_their_invocation() -> None:
    """The batch processor's workers run with the invocation's context copied: their metrics are its own."""
    import contextvars
    from concurrent.futures import ThreadPoolExecutor

    from aws_lambda_powertools import Metrics

    capture = LineCapture()
    with metrics_per_invocation(), capture_stdout(capture), invocation_scope():
        intake = Metrics(namespace="Orders", service="intake")
        with ThreadPoolExecutor(2) as pool:
            for _ in range(2):
                context = contextvars.copy_context()
                pool.submit(context.run, intake.add_metric, name="DuplicatesSuppressed", unit="Count", value=1).result()
        intake.flush_metrics()
    (doc,) = [json.loads(line) for line in capture.lines if '"_aws"' in line]
    assert doc["DuplicatesSuppressed"] == [1.0, 1.0]


def test_lambda_errors_stamped_when_the_handler_ended_not_after_the_runtime_bookkeeping(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The handler's EMF document is stamped as it returns; AWS/Lambda Errors must fall at that instant too, not
    after the emulator formats the error payload (under load that gap straddled a minute: a false page)."""
    from local_cloud import lambda_runtime
    from local_cloud.clock import SimClock
    from local_cloud.lambda_runtime import LocalFunction

    (tmp_path / "failing_h.py").write_text("def handler(event, context):\n    raise ValueError('declined')\n")
    clock = SimClock()
    fn = LocalFunction("Fn", "fn-failing", tmp_path, "failing_h.handler", {}, 3.0, 128, [], clock)
    original = lambda_runtime.error_payload

    def slow_payload(exc: BaseException) -> dict[str, Any]:
        clock.advance(30)  # the runtime's own work after the handler ended, on a loaded machine
        return original(exc)

    monkeypatch.setattr(lambda_runtime, "error_payload", slow_payload)
    before = clock.now()
    _, errored = fn.invoke({})
    assert errored
    ((at, failed),) = fn.history
    assert failed and at - before < 5


def test_lambda_errors_stamped_at_the_instant_its_emf_document_was(tmp_path: Any) -> None:
    """Work after the handler's EMF flush (its outer decorators: the tracer records the exception, the
    logger's context) still takes simulated time; AWS/Lambda Errors must fall in the minute of the
    invocation's ExpectedErrors, else ``errors - expected`` reads +1 there (a false page, decision 0020)."""
    from clocks import StepClock

    from local_cloud.capture import LineCapture, capture_stdout
    from local_cloud.lambda_runtime import LocalFunction
    from local_cloud.simtime import simulated_now

    (tmp_path / "emf_h.py").write_text(
        "from aws_lambda_powertools import Metrics\n"
        "metrics = Metrics(namespace='OrderPipeline', service='ship-order')\n"
        "CLOCK = None\n"
        "@metrics.log_metrics\n"
        "def _body(event, context):\n"
        "    metrics.add_metric(name='ExpectedErrors', unit='Count', value=1)\n"
        "    raise ValueError('undeliverable')\n"
        "def handler(event, context):\n"
        "    try:\n"
        "        return _body(event, context)\n"
        "    finally:\n"
        "        CLOCK.t += 1.0  # the outer decorators' work, after the flush\n"
    )
    clock = StepClock()
    clock.t = 60 * 1_000_000 - 0.5  # half a second before a minute's end
    fn = LocalFunction("Fn", "fn-emf", tmp_path, "emf_h.handler", {}, 3.0, 128, [], clock)
    fn._load().__globals__["CLOCK"] = clock
    capture = LineCapture()
    with metrics_per_invocation(), simulated_now(clock), capture_stdout(capture):
        _, errored = fn.invoke({})
    (doc,) = [json.loads(line) for line in capture.lines if '"_aws"' in line]
    ((at, failed),) = fn.history
    assert errored and failed
    assert int(at // 60) == int(doc["_aws"]["Timestamp"] / 1000 // 60)
