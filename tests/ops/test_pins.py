"""The emulator carries its exact moto pin: the one its patches and their canaries were checked on."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _moto(spec: str) -> str:
    match = re.match(r"moto(\[[^\]]*\])?\s*(.*)$", spec.strip())
    assert match, spec
    return match.group(2)


def test_pins_local_cloud_pins_moto_exactly_as_the_dev_requirements() -> None:
    package = tomllib.loads((REPO / "packages" / "local_cloud" / "pyproject.toml").read_text())
    (ours,) = [_moto(d) for d in package["project"]["dependencies"] if d.startswith("moto")]
    (dev,) = [
        _moto(line) for line in (REPO / "requirements-dev.txt").read_text().splitlines() if line.startswith("moto")
    ]
    assert ours.startswith("==") and ours == dev, (ours, dev)


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
