"""The patch registry's entry type (:mod:`local_cloud.patches` lists the entries)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["correctness", "emulation", "simulated-time", "fault-injection", "observation", "speed", "speed-read"]


@dataclass(frozen=True)
class Patch:
    """One patched attribute of a third-party module (``target``: ``module:Owner.attribute``)."""

    name: str
    target: str
    kind: Kind
    why: str
    applied_by: str
    canary: str
    measured: str = ""  # speed patches: what it saves, as measured
