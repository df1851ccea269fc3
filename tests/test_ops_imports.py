"""``ops`` is product: importing the operator CLI loads nothing of the workshop (issue 41, Build 1).

Checked in a fresh interpreter, by what it really loads (``sys.modules``), rather than by reading
the sources: a lazy import, a plugin or a re-export that reaches ``harness`` or ``local_cloud`` is
found the same way. The local-run verbs live in the workshop's own entry point
(``python -m harness local ...``); ``python -m ops local ...`` forwards to it in a subprocess.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: The workshop's top-level packages: the emulator and the app's scenarios.
WORKSHOP = ("harness", "local_cloud")

_LOADED = (
    "import json, sys\n"
    "import ops.cli\n"
    "ops.cli.build_parser()\n"
    "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {workshop!r})))\n"
)


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def test_ops_cli_import_loads_no_module_of_the_workshop() -> None:
    done = _run(["-c", _LOADED.format(workshop=set(WORKSHOP))], REPO)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def test_ops_local_forwards_to_the_workshop_entry_point() -> None:
    """``ops local`` and ``ops capacity`` answer as ``python -m harness`` does (here: its usage error)."""
    forwarded = _run(["-m", "ops", "local", "run", "--orders", "0"], REPO)
    direct = _run(["-m", "harness", "local", "run", "--orders", "0"], REPO)
    assert forwarded.returncode == direct.returncode == 2
    assert "argument --orders: must be >= 1, got 0" in forwarded.stderr
    assert forwarded.stderr.splitlines()[-1] == direct.stderr.splitlines()[-1]
    help_text = _run(["-m", "ops", "capacity", "--help"], REPO)
    assert help_text.returncode == 0 and "--rate" in help_text.stdout


def test_ops_local_without_the_workshop_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """The operator CLI installed alone (no ``harness`` on the path): ``ops local`` says so, exit 2."""
    shutil.copytree(REPO / "ops", tmp_path / "ops", ignore=shutil.ignore_patterns("__pycache__"))
    done = _run(["-m", "ops", "local", "run", "--orders", "1"], tmp_path)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith("python -m ops: error:") and "workshop" in line and "harness" in line
    # The operator verbs still work without it.
    assert _run(["-m", "ops", "dlq", "--help"], tmp_path).returncode == 0
