"""The dev sandbox provider functions' settings (in the sandbox package: prod deploys none of it)."""

from __future__ import annotations

from typing import NamedTuple

from order_domain import env as names
from order_domain.settings import Env, environ, required


class SandboxSettings(NamedTuple):
    """The dev sandbox provider functions (payment and carrier): their ledger table."""

    ledger_table: str

    @classmethod
    def from_env(cls, env: Env | None = None) -> SandboxSettings:
        return cls(ledger_table=required(environ(env), names.LEDGER_TABLE_NAME))
