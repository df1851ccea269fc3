"""A cold start is a new process on Lambda: the function's Powertools logger is configured from its own
environment, never reused from an earlier load of the same service in this process (another test's quiet
handlers at CRITICAL silenced a function's INFO lines in an e2e test that ran after them in the same worker)."""

from __future__ import annotations

from pathlib import Path

from local_cloud.capture import LineCapture
from local_cloud.clock import SimClock
from local_cloud.lambda_runtime import LocalFunction, load_handler

LOGS_AT_INFO = (
    "from aws_lambda_powertools import Logger\n"
    "logger = Logger()\n"
    "def handler(event, context):\n"
    "    logger.info('cold start says hello')\n"
    "    return {}\n"
)
SERVICE = "cold-start-logging-test"


def test_cold_start_logger_level_is_the_functions_not_an_earlier_loads(tmp_path: Path) -> None:
    code = tmp_path / "fn"
    code.mkdir()
    (code / "h.py").write_text(LOGS_AT_INFO)
    load_handler(code, "h.handler", {"POWERTOOLS_SERVICE_NAME": SERVICE, "POWERTOOLS_LOG_LEVEL": "CRITICAL"})
    capture = LineCapture()
    env = {"POWERTOOLS_SERVICE_NAME": SERVICE}
    function = LocalFunction("Fn", "fn", code, "h.handler", env, 3.0, 128, [], SimClock(), capture=capture)
    _, errored = function.invoke({})
    assert not errored
    assert [line for line in capture.lines if "cold start says hello" in line], capture.lines
