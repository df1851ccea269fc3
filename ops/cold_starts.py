"""``ops cold-starts``: Init Duration as Lambda measured it, read from the functions' REPORT records.

The functions log in JSON with system log level INFO (``constructs_lib.function``), so every invocation
writes a ``platform.report`` record whose ``record.metrics`` hold ``durationMs`` and, for a cold start,
``initDurationMs`` (https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-logformat.html).
This is the traced cold start on Lambda itself (AWS's OpenTelemetry layer included), which ``make
bench`` can only model: run it after a deploy and after the smoke test (decision 0019).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Iterator
from typing import Any

from ops.target import Target

REPORT_TYPE = "platform.report"


def stack_functions(target: Target, stack: str) -> list[str]:
    """The physical names of the stack's Lambda functions (CloudFormation ListStackResources)."""
    names = []
    for page in target.client("cloudformation").get_paginator("list_stack_resources").paginate(StackName=stack):
        names += [
            r["PhysicalResourceId"]
            for r in page["StackResourceSummaries"]
            if r["ResourceType"] == "AWS::Lambda::Function"
        ]
    return sorted(names)


def _reports(target: Target, log_group: str, start_ms: int) -> Iterator[dict[str, Any]]:
    pages = (
        target.client("logs").get_paginator("filter_log_events").paginate(logGroupName=log_group, startTime=start_ms)
    )
    for page in pages:
        for event in page.get("events", []):
            try:
                record = json.loads(event["message"])
            except (ValueError, KeyError):
                continue
            if isinstance(record, dict) and record.get("type") == REPORT_TYPE:
                yield record.get("record", {}).get("metrics", {})


def cold_starts(target: Target, stack: str, minutes: float = 60.0) -> dict[str, dict[str, Any]]:
    """Per function: invocations reported, cold starts, median and max Init Duration (ms) in the last ``minutes``."""
    start_ms = int((time.time() - minutes * 60) * 1000)
    lam = target.client("lambda")
    out = {}
    for name in stack_functions(target, stack):
        config = lam.get_function_configuration(FunctionName=name)
        log_group = config.get("LoggingConfig", {}).get("LogGroup") or f"/aws/lambda/{name}"
        metrics = list(_reports(target, log_group, start_ms))
        inits = [float(m["initDurationMs"]) for m in metrics if "initDurationMs" in m]
        out[name] = {
            "reports": len(metrics),
            "cold_starts": len(inits),
            "init_ms_median": round(statistics.median(inits), 1) if inits else None,
            "init_ms_max": round(max(inits), 1) if inits else None,
        }
    return out


def format_cold_starts(figures: dict[str, dict[str, Any]]) -> str:
    lines = [f"{'function':<60} {'reports':>7} {'cold':>5} {'init ms (median)':>17} {'max':>8}"]
    for name, f in figures.items():
        median = "-" if f["init_ms_median"] is None else f"{f['init_ms_median']:.1f}"
        top = "-" if f["init_ms_max"] is None else f"{f['init_ms_max']:.1f}"
        lines.append(f"{name:<60} {f['reports']:>7} {f['cold_starts']:>5} {median:>17} {top:>8}")
    return "\n".join(lines)
