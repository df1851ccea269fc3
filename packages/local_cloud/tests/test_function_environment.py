"""A function sees its environment for the whole invocation, as on Lambda (not only while its module is
imported), and two functions running at once on the emulator's threads each see their own (issue 42)."""

from __future__ import annotations

import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from unittest import mock

from local_cloud.clock import SimClock
from local_cloud.lambda_runtime import LocalFunction

#: Reads its environment in the handler, like ordinary Lambda code (no module-level read).
READS_IN_HANDLER = (
    "import os\n"
    "def handler(event, context):\n"
    "    barrier = event.get('barrier')\n"
    "    if barrier is not None:\n"
    "        BARRIERS[barrier].wait(timeout=5)\n"
    "    return {'table': os.environ['TABLE_NAME'], 'region': os.getenv('AWS_REGION'),\n"
    "            'keys': sorted(k for k in os.environ if k.startswith('TEAM_'))}\n"
    "BARRIERS = {}\n"
)


def _function(tmp_path: Path, name: str, env: dict[str, str]) -> LocalFunction:
    code = tmp_path / name
    code.mkdir()
    (code / "h.py").write_text(READS_IN_HANDLER)
    return LocalFunction("Fn", name, code, "h.handler", env, 3.0, 128, [], SimClock())


def test_function_environment_read_in_the_handler_is_the_functions(tmp_path: Path) -> None:
    fn = _function(tmp_path, "booking", {"TABLE_NAME": "bookings", "AWS_REGION": "eu-west-1", "TEAM_A": "1"})
    result, errored = fn.invoke({})
    assert not errored, result
    # The function's own value wins over the test process's (AWS_REGION is set by the tests' conftest).
    assert json.loads(result) == {"table": "bookings", "region": "eu-west-1", "keys": ["TEAM_A"]}
    # ... and nothing of it is left in the process once the invocation ended.
    assert "TABLE_NAME" not in os.environ and os.environ["AWS_REGION"] == "us-east-1"


def test_function_environment_is_per_invocation_when_functions_run_at_once(tmp_path: Path) -> None:
    hotel = _function(tmp_path, "hotel", {"TABLE_NAME": "hotels", "TEAM_HOTEL": "h"})
    flight = _function(tmp_path, "flight", {"TABLE_NAME": "flights", "TEAM_FLIGHT": "f"})
    barrier = threading.Barrier(3)  # both handlers inside their invocation, and this thread, at once
    for fn in (hotel, flight):
        fn._load().__globals__["BARRIERS"]["both"] = barrier
    outside: list[Any] = []

    def look_outside() -> None:
        barrier.wait(timeout=5)
        outside.append(os.environ.get("TABLE_NAME"))

    with ThreadPoolExecutor(3) as pool:
        answers = [pool.submit(fn.invoke, {"barrier": "both"}) for fn in (hotel, flight)]
        pool.submit(look_outside).result()
        (hotel_result, hotel_errored), (flight_result, flight_errored) = (a.result() for a in answers)
    assert not hotel_errored and not flight_errored, (hotel_result, flight_result)
    assert json.loads(hotel_result)["table"] == "hotels" and json.loads(hotel_result)["keys"] == ["TEAM_HOTEL"]
    assert json.loads(flight_result)["table"] == "flights" and json.loads(flight_result)["keys"] == ["TEAM_FLIGHT"]
    assert outside == [None]  # the test process never saw either function's environment


def test_function_environment_running_across_a_patch_guard_is_no_leak() -> None:
    """A served endpoint's background invocation may start before a test and end after it (``ops local up``
    serves several tests): the overlay it installs is not a patch the test left behind; one left installed is."""
    from local_cloud.function_env import function_environment
    from local_cloud.patches import outlived, patched_now

    started, finish = threading.Event(), threading.Event()

    def background_invocation() -> None:
        with function_environment({"TABLE_NAME": "background"}):
            started.set()
            finish.wait(timeout=5)

    worker = threading.Thread(target=background_invocation)
    before = patched_now()
    worker.start()
    assert started.wait(timeout=5)
    assert outlived(before) == []  # installed while the block ran, still running after it
    finish.set()
    worker.join(timeout=5)
    assert outlived(before) == []
    leaked = mock.patch.object(os.environ, "_data", dict(vars(os.environ)["_data"]))
    leaked.start()
    try:
        assert outlived(before) == ["os:environ._data"]
    finally:
        leaked.stop()
