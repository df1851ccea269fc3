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
    change: str = ""  # speed patches: the upstreamable change (local_cloud.patches_speed.SPEED_CHANGES) it is part of


@dataclass(frozen=True)
class SpeedChange:
    """Speed patches that together make one change moto could take upstream as it is, kept only while it
    saves at least :data:`MIN_GATE_SHARE` of the end-to-end time of the test gate that runs the emulator."""

    name: str
    what: str
    emulator_tests_with: float  # wall seconds of the gate's tests that run the emulator, every patch on
    emulator_tests_without: float  # ... the change's patches off, in the same series of runs
    gate_seconds: float  # the whole gate's end-to-end wall seconds on that machine (the rule's denominator)
    measured: str  # when, the command, the load

    @property
    def saves_share(self) -> float:
        """The share of the gate's end-to-end time the change saves."""
        return (self.emulator_tests_without - self.emulator_tests_with) / self.gate_seconds


#: A speed change stays only where it saves at least this share of the test gate's end-to-end time.
MIN_GATE_SHARE = 0.10
