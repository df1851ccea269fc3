"""The sharded run pins each shard process to its own CPU and says what each cost (CPU seconds), beside its
wall time."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from harness.run.shards import shard_cpus, spawn_pinned, wait_cpu_seconds


def test_shards_wait_cpu_seconds_counts_the_shard_process_user_and_system_time() -> None:
    busy = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass"
    proc = subprocess.Popen([sys.executable, "-c", busy])
    returncode, cpu = wait_cpu_seconds(proc)
    assert returncode == 0
    assert 0.3 <= cpu < 5.0
    assert proc.returncode == 0  # the Popen knows it ended (no zombie, no second wait)


def test_shards_wait_cpu_seconds_keeps_a_failed_shard_exit_code() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    assert wait_cpu_seconds(proc)[0] == 3


AFFINITY = "import os, json; print(json.dumps(sorted(os.sched_getaffinity(0))))"
needs_affinity = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="CPU affinity is Linux's")


@needs_affinity
def test_shards_spawn_pinned_starts_the_shard_on_its_own_cpu_and_leaves_the_runner_free() -> None:
    before = os.sched_getaffinity(0)
    cpu = max(before)
    proc = spawn_pinned([sys.executable, "-c", AFFINITY], cpu, stdout=subprocess.PIPE)
    out, _ = proc.communicate(timeout=30)
    assert json.loads(out) == [cpu]
    assert os.sched_getaffinity(0) == before  # the runner's own thread is put back


@needs_affinity
def test_shards_spawn_pinned_restores_the_runner_when_the_spawn_fails() -> None:
    before = os.sched_getaffinity(0)
    with pytest.raises(FileNotFoundError):
        spawn_pinned(["/nonexistent/python"], max(before))
    assert os.sched_getaffinity(0) == before


def test_shards_shard_cpus_give_each_shard_its_own_cpu_round_robin() -> None:
    assert shard_cpus(2, available={0, 1}) == [0, 1]
    assert shard_cpus(3, available={2, 5}) == [2, 5, 2]
    assert shard_cpus(1, available={0, 1, 2, 3}) == [0]
    assert shard_cpus(2, available=None) == [None, None]  # no affinity API (macOS): not pinned
