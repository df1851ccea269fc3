"""Runtime parity: the template deploys the Python the tests run on.

The Makefile reads the Lambda runtime's version from
``packages/constructs_lib/src/constructs_lib/function.py`` and builds the virtualenvs (the project's and the
rehearsal's MiniStack) with that Python; these tests fail when a change of either side leaves the other behind.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

from constructs_lib.function import DEFAULT_RUNTIME

ROOT = Path(__file__).resolve().parents[2]
#: The line the Makefile's LAMBDA_PYTHON reads (its sed takes PYTHON_3_<minor> from it).
MAKEFILE_LINE = re.compile(r"^DEFAULT_RUNTIME = lambda_\.Runtime\.PYTHON_3_(\d+)\b", re.MULTILINE)


def _runtime_version() -> str:
    name = DEFAULT_RUNTIME.name
    assert name.startswith("python"), name
    return name.removeprefix("python")


def test_runtime_parity_template_runtime_is_the_running_interpreter() -> None:
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert _runtime_version() == running, (
        f"the template deploys {DEFAULT_RUNTIME.name} but the tests run on Python {running}: "
        "rebuild the virtualenv (make setup) or change DEFAULT_RUNTIME in "
        "packages/constructs_lib/src/constructs_lib/function.py"
    )


def test_runtime_parity_makefile_reads_the_runtime_line() -> None:
    source = (ROOT / "packages/constructs_lib/src/constructs_lib/function.py").read_text()
    found = MAKEFILE_LINE.findall(source)
    assert [f"3.{minor}" for minor in found] == [_runtime_version()]


def test_runtime_parity_linters_target_the_runtime() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    version = _runtime_version()
    assert pyproject["tool"]["ruff"]["target-version"] == "py" + version.replace(".", "")
    assert pyproject["tool"]["mypy"]["python_version"] == version
    assert pyproject["project"]["requires-python"] == f">={version}"
