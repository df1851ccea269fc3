"""The sharded run says what each shard process cost (CPU seconds), beside its wall time."""

from __future__ import annotations

import subprocess
import sys

from harness.shards import wait_cpu_seconds


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
