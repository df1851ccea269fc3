"""``python -m ops local ...`` and ``python -m ops capacity ...``: forwarded to the workshop's own entry point.

The operator CLI is product: it runs against a deployed stack and imports nothing of the workshop (the
emulator ``local_cloud`` and the app's scenarios ``harness``). The verbs that need the emulator live in
``python -m harness``; these two stay here as thin forwarders, because the Makefile's targets, the docs and
people's fingers use them. The workshop runs in a subprocess, never imported: an operator machine with only
``ops`` installed gets one clear line and exit status 2.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from ops.errors import OpsError

#: The verbs that run in the workshop (``python -m harness <verb> ...``).
FORWARDED = ("local", "capacity")
#: The workshop's top-level packages: the app's scenarios and the emulator.
WORKSHOP_PACKAGES = ("harness", "local_cloud")
ENTRY_POINT = "harness"


class WorkshopMissing(OpsError):
    """The workshop is not installed next to the operator CLI."""


def workshop_root() -> Path:
    """The folder ``harness`` is imported from (found, never imported); :class:`WorkshopMissing` if absent."""
    specs = {name: importlib.util.find_spec(name) for name in WORKSHOP_PACKAGES}
    missing = [name for name, spec in specs.items() if spec is None]
    harness = specs[ENTRY_POINT]
    if missing or harness is None or not harness.submodule_search_locations:
        raise WorkshopMissing(
            f"this needs the workshop ({', '.join(missing or WORKSHOP_PACKAGES)} not found): run it from a clone "
            "of the repository after `make setup` (python -m harness ...); the operator verbs (dlq, trace, "
            "repair, smoke, cold-starts) work without it"
        )
    return Path(next(iter(harness.submodule_search_locations))).parent


def forward(argv: Sequence[str]) -> int:
    """Run ``python -m harness <argv>`` with this interpreter; its exit status (128 + N if killed by signal N)."""
    root = workshop_root()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH", "")) if p)
    code = subprocess.call([sys.executable, "-m", ENTRY_POINT, *argv], env=env)
    return 128 - code if code < 0 else code
