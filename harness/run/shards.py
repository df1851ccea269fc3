"""Run a local chaos run as N processes (one moto each) and merge their reports.

Orders are independent, and one Python process uses one core (moto and the handlers share
one interpreter lock), so a run of thousands of orders is split by order index across
processes. Each shard checks its own invariants; the merged report is checked again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.reporting.costs import dollars_per_million_orders, per_order
from harness.reporting.iam_reasons import explain
from harness.reporting.invariants import check
from harness.stack.options import RunOptions
from harness.stack.synth import load_assembly
from local_cloud.iam_enforce import merge_reports as merge_iam
from ops.errors import UsageError

#: Fields whose shard values are not summed.
_NOT_SUMMED = ("elapsed", "cost", "invariants", "aws_calls", "faults_first_at")


def merge(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """Numbers add up, lists concatenate, dicts merge key by key, booleans OR."""

    def combine(a: Any, b: Any) -> Any:
        if isinstance(a, bool) or isinstance(b, bool):
            return bool(a) or bool(b)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            return a + b
        if isinstance(a, list) and isinstance(b, list):
            return a + b
        if isinstance(a, dict) and isinstance(b, dict):
            out = dict(a)
            for key, value in b.items():
                out[key] = combine(out[key], value) if key in out else value
            return out
        return a if a is not None else b

    merged: dict[str, Any] = {}
    for report in reports:
        for key, value in report.items():
            if key in _NOT_SUMMED:
                continue
            merged[key] = combine(merged[key], value) if key in merged else value
    merged["alarms_in_alarm"] = sorted(set(merged.get("alarms_in_alarm", [])))
    return merged


def _finish(merged: dict[str, Any], reports: list[dict[str, Any]], wall: float) -> dict[str, Any]:
    orders = max(1, merged["orders"]["submitted"])
    operations: dict[str, int] = {}
    for report in reports:
        for op, n in report["aws_calls"]["by_operation"].items():
            operations[op] = operations.get(op, 0) + n
    by_service: dict[str, int] = {}
    for op, n in operations.items():
        by_service[op.split(":", 1)[0]] = by_service.get(op.split(":", 1)[0], 0) + n
    merged["aws_calls"] = {
        "by_service": by_service,
        "by_operation": operations,
        "per_order": round(sum(operations.values()) / orders, 2),
        "provider_stand_in_excluded": sum(r["aws_calls"].get("provider_stand_in_excluded", 0) for r in reports),
    }
    weights = [r["orders"]["submitted"] for r in reports]
    transitions = sum(r["cost"]["per_order"]["state_transitions"] * w for r, w in zip(reports, weights, strict=True))
    lambda_calls = sum(r["cost"]["per_order"]["lambda_invocations"] * w for r, w in zip(reports, weights, strict=True))
    units = per_order(operations, int(lambda_calls), int(transitions), orders)
    merged["cost"] = {
        "per_order": {k: round(v, 2) for k, v in vars(units).items()},
        "usd_per_million_orders": dollars_per_million_orders(units),
    }
    # Each shard has its own copy of every queue: an alarm is in ALARM if it is in any shard.
    states: dict[str, dict[str, Any]] = {}
    for report in reports:
        for queue, state in report["dlq_alarm_states"].items():
            prior = states.get(queue, {"alarm": state["alarm"], "in_alarm": False, "depth": 0})
            states[queue] = {
                "alarm": state["alarm"],
                "in_alarm": prior["in_alarm"] or state["in_alarm"],
                "depth": prior["depth"] + state["depth"],
            }
    merged["dlq_alarm_states"] = states
    first_at: dict[str, float] = {}  # when each fault kind first happened in any shard (not a sum)
    for report in reports:
        for kind, at in (report.get("faults_first_at") or {}).items():
            first_at[kind] = min(at, first_at.get(kind, at))
    merged["faults_first_at"] = first_at
    merged["iam"] = explain(
        merge_iam([r.get("iam") or {} for r in reports])
    )  # a grant is unused only if unused in every shard
    # Maxima, not sums.
    merged["logs"]["longest_line_bytes"] = max(r["logs"].get("longest_line_bytes", 0) for r in reports)
    if "pii" in merged:
        merged["pii"]["examples"] = merged["pii"]["examples"][:5]
    merged["elapsed"] = {
        "wall_seconds": round(wall, 3),
        "simulated_seconds": max(r["elapsed"]["simulated_seconds"] for r in reports),
        "shards": len(reports),
        "shard_wall_seconds": [r["elapsed"]["wall_seconds"] for r in reports],
        "shard_phase_seconds": [r["elapsed"].get("phase_seconds", {}) for r in reports],
    }
    merged["invariants"] = check(merged)
    return merged


def wait_cpu_seconds(proc: subprocess.Popen[bytes]) -> tuple[int, float]:
    """Wait for a shard process; its exit code and the CPU seconds it used (user + system, from
    ``wait4``: the shard's own, which ``RUSAGE_CHILDREN`` of the whole run would sum with the synth's)."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, round(usage.ru_utime + usage.ru_stime, 1)


def runner_cpus() -> set[int] | None:
    """The CPUs this process may run on; None where the platform has no affinity API (macOS)."""
    return os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None


def shard_cpus(workers: int, available: set[int] | None) -> list[int | None]:
    """The CPU each shard runs on: the ``available`` CPUs in turn; none pinned when that is unknown."""
    if not available:
        return [None] * workers
    cpus = sorted(available)
    return [cpus[shard % len(cpus)] for shard in range(workers)]


def spawn_pinned(cmd: list[str], cpu: int | None, **popen: Any) -> subprocess.Popen[bytes]:
    """Start ``cmd`` on ``cpu`` alone. A shard is one interpreter whose threads pass the GIL among
    themselves many thousand times a second; left free, the kernel spreads them over both cores and each
    handoff crosses cores (and waits on the other shard's thread). Pinned, a 2,000-order chaos run on 2
    cores took 95 to 105 s against 125 to 131 s, each shard's CPU time 86 to 97 s against 102 to 116 s
    (2026-11-25, in ``git log -p docs/results.md``). The runner's calling thread is pinned for the fork only
    (a child inherits its parent thread's affinity, and so do all the threads it starts), then put back."""
    if cpu is None:
        return subprocess.Popen(cmd, **popen)
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        return subprocess.Popen(cmd, **popen)
    finally:
        os.sched_setaffinity(0, before)


def run_sharded(options: RunOptions, args: list[str], workers: int) -> dict[str, Any]:
    """Synthesize once, run ``workers`` shard processes (``python -m harness local run``), one per CPU, merge."""
    started = time.monotonic()
    assembly = load_assembly(options)
    with tempfile.TemporaryDirectory(prefix="chaos-") as tmp:
        procs = []
        for shard, on_cpu in enumerate(shard_cpus(workers, runner_cpus())):
            out = Path(tmp) / f"shard-{shard}.json"
            cmd = [sys.executable, "-m", "harness", "local", "run", *args]
            cmd += ["--assembly", str(assembly.outdir), "--shard", str(shard), "--shards", str(workers)]
            cmd += ["--report-file", str(out), "--workers", "1"]
            procs.append((spawn_pinned(cmd, on_cpu, stdout=subprocess.DEVNULL), out))
        reports, cpu = [], []
        for proc, out in procs:
            cpu.append(wait_cpu_seconds(proc)[1])
            if not out.exists():  # a failed invariant still writes its report; a crash does not
                raise RuntimeError(f"shard {out.name} ended with exit code {proc.returncode} and no report")
            reports.append(json.loads(out.read_text()))
    merged = _finish(merge(reports), reports, time.monotonic() - started)
    merged["elapsed"]["shard_cpu_seconds"] = cpu
    return merged


def shard_options(options: RunOptions, shard: int, shards: int) -> RunOptions:
    if not 0 <= shard < shards:
        raise UsageError(f"--shard must be within 0..{shards - 1}, got {shard}")
    return replace(options, shard=shard, shards=shards)
