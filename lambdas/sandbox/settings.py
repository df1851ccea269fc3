"""The dev sandbox provider functions' settings (in the sandbox package: prod deploys none of it)."""

from __future__ import annotations

from typing import NamedTuple


class SandboxSettings(NamedTuple):
    """The dev sandbox provider functions (payment and carrier): their ledger table
    (read with :func:`order_domain.settings.load`)."""

    ledger_table: str
