"""A moto server on loopback, in its own process (its CPU is not ours, like a real service's)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

HOST = "127.0.0.1"  # loopback only: nothing leaves the machine


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


@contextmanager
def moto_server(port: int | None = None, startup_timeout: float = 30.0) -> Iterator[str]:
    """Start ``moto.server`` on 127.0.0.1 and yield its endpoint URL; stop it on exit."""
    port = port or _free_port()
    endpoint = f"http://{HOST}:{port}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", HOST, "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            try:
                with urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto server did not start on {endpoint}") from None
                time.sleep(0.1)
        yield endpoint
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
