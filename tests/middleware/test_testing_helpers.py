"""lambda_resilience.testing's helpers for another team's handler tests."""

from __future__ import annotations

import logging

from aws_lambda_powertools import Logger

from lambda_resilience.testing import LogLines, new_process_logger

SERVICE = "new-process-logger-test"


def test_new_process_logger_lets_a_reload_take_its_own_level() -> None:
    """Without it, the second ``Logger`` of the service keeps the first one's CRITICAL (Powertools leaves a
    configured logger as it is) and the INFO line is lost."""
    Logger(service=SERVICE, level="CRITICAL", logger_handler=logging.StreamHandler(LogLines()))
    new_process_logger(SERVICE)
    lines = LogLines()
    Logger(service=SERVICE, level="INFO", logger_handler=logging.StreamHandler(lines)).info("kept")
    assert [r["message"] for r in lines.records()[0]] == ["kept"]
    assert logging.getLogger(SERVICE).level == logging.INFO
