"""The emulator's moto range: the releases its patches' canaries pass on; the repository locks one of them."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.specifiers import SpecifierSet

REPO = Path(__file__).resolve().parents[2]


def _moto(spec: str) -> str:
    match = re.match(r"moto(\[[^\]]*\])?\s*(.*)$", spec.strip())
    assert match, spec
    return match.group(2)


#: The moto releases the canaries passed on (2026-11-28: 5.2.3, 5.2.4, 5.2.5 pass; 5.2.2, 5.2.0 and 5.1.22 fail
#: four, the trace header's and the execution waits'; 5.2.5 is the newest release). Checked by running
#: ``packages/local_cloud/tests/test_patch_canaries.py`` with each release installed (``pip install --no-deps
#: --target DIR moto==X``, ``PYTHONPATH=DIR``).
CANARY_RANGE = ">=5.2.3,<=5.2.5"


def test_pins_local_cloud_takes_the_moto_range_its_canaries_accept_and_the_lock_is_in_it() -> None:
    package = tomllib.loads((REPO / "packages" / "local_cloud" / "pyproject.toml").read_text())
    (ours,) = [_moto(d) for d in package["project"]["dependencies"] if d.startswith("moto")]
    (dev,) = [
        _moto(line) for line in (REPO / "requirements-dev.txt").read_text().splitlines() if line.startswith("moto")
    ]
    assert ours == CANARY_RANGE, ours
    assert dev.startswith("==") and SpecifierSet(ours).contains(dev.removeprefix("==")), (ours, dev)


def test_pins_local_cloud_test_extra_pins_as_the_repository() -> None:
    """The package's tests run on the pytest and CDK the repository's tests run on."""
    package = tomllib.loads((REPO / "packages" / "local_cloud" / "pyproject.toml").read_text())
    extra = dict(spec.split("==") for spec in package["project"]["optional-dependencies"]["test"])
    pinned = dict(
        line.split("==")
        for name in ("requirements.txt", "requirements-dev.txt")
        for line in (REPO / name).read_text().splitlines()
        if "==" in line and not line.startswith("#")
    )
    assert extra and all(pinned.get(name) == version for name, version in extra.items()), (extra, pinned)
