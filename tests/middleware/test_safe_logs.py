"""shared.logs: every log line masked (customer data keys) and bounded (16 KB), on Powertools Logger."""

from __future__ import annotations

import io
import json
import uuid
from typing import Any

from lambda_resilience.logs import DEFAULT_SENSITIVE_KEYS, MAX_LINE_BYTES, get_logger


def _logger(sensitive_keys: frozenset[str] = DEFAULT_SENSITIVE_KEYS) -> tuple[Any, io.StringIO]:
    stream = io.StringIO()
    service = f"safe-logs-{uuid.uuid4().hex[:8]}"
    return get_logger(sensitive_keys=sensitive_keys, service=service, logger_handler=_handler(stream)), stream


def _handler(stream: io.StringIO) -> Any:
    import logging

    return logging.StreamHandler(stream)


def _lines(stream: io.StringIO) -> list[str]:
    return [line for line in stream.getvalue().splitlines() if line]


def test_safe_logs_caller_sensitive_keys_are_erased_at_any_depth():
    logger, stream = _logger(frozenset({"payment_token", "shipping_address", "name", "line1"}))

    logger.info(
        "request",
        extra={
            "payment_token": "tok_secret",
            "order": {"shipping_address": {"name": "Ada", "line1": "1 Way"}, "items": [{"sku": "A"}]},
            "order_id": "o-1",
        },
    )

    (line,) = _lines(stream)
    assert "tok_secret" not in line and "Ada" not in line and "1 Way" not in line
    parsed = json.loads(line)
    assert parsed["order_id"] == "o-1"
    assert parsed["order"]["items"] == [{"sku": "A"}]
    assert parsed["payment_token"] != "tok_secret"


def test_safe_logs_huge_message_and_traceback_stay_under_16_kb():
    logger, stream = _logger()
    try:
        raise ValueError("v" * 2_000_000)
    except ValueError:
        logger.exception("m" * 1_000_000, extra={"blob": ["x" * 100] * 10_000, "note": "n" * 50_000})

    (line,) = _lines(stream)
    assert len(line.encode()) <= MAX_LINE_BYTES
    parsed = json.loads(line)  # still one valid JSON object
    assert parsed["level"] == "ERROR"
    assert "truncated" in parsed["message"]
    assert parsed["exception"].rstrip().endswith("v")  # the tail (the error line) is kept


def test_safe_logs_multibyte_extras_fall_back_to_core_keys_under_the_limit():
    logger, stream = _logger()

    logger.warning("wide", extra={f"k{i}": "✓" * 1000 for i in range(40)})

    (line,) = _lines(stream)
    assert len(line.encode()) <= MAX_LINE_BYTES
    assert "dropped_keys" in json.loads(line)


def test_safe_logs_small_line_is_unchanged():
    logger, stream = _logger()

    logger.info("hello", extra={"order_id": "o-2", "count": 3})

    parsed = json.loads(_lines(stream)[0])
    assert (parsed["message"], parsed["order_id"], parsed["count"]) == ("hello", "o-2", 3)


def test_safe_logs_default_keys_erase_generic_personal_data():
    logger, stream = _logger()

    logger.info("signup", extra={"user": {"email": "ada@example.com", "password": "hunter2"}, "plan": "pro"})

    parsed = json.loads(_lines(stream)[0])
    assert "ada@example.com" not in json.dumps(parsed) and "hunter2" not in json.dumps(parsed)
    assert parsed["plan"] == "pro"
