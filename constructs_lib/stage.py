"""Stage settings (dev / prod) read once from CDK context."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import RemovalPolicy
from constructs import Node

VALID_STAGES = ("dev", "prod")


@dataclass(frozen=True)
class StageConfig:
    """What differs between stages.

    Attributes:
        name: ``dev`` (default) or ``prod``.
        removal_policy: DESTROY in dev, RETAIN in prod (tables and log groups survive a stack delete).
        deletion_protection: DynamoDB deletion protection, on in prod only.
        alarm_email: optional e-mail subscribed to the alarm topic (context ``alarm_email``).
        stuck_after_minutes: an order in a non-terminal status for longer than this is stuck
            (context ``stuck_after_minutes``, default 30: above the saga's execution timeout,
            so an order whose saga is still retrying is never reported; the stack checks this).
    """

    name: str = "dev"
    alarm_email: str | None = None
    stuck_after_minutes: int = 30

    def __post_init__(self) -> None:
        if self.name not in VALID_STAGES:
            raise ValueError(f"stage must be one of {VALID_STAGES}, got {self.name!r}")
        if not 1 <= self.stuck_after_minutes <= 24 * 60:
            raise ValueError(f"stuck_after_minutes must be within 1..1440, got {self.stuck_after_minutes}")
        if self.alarm_email is not None and "@" not in self.alarm_email:
            raise ValueError(f"alarm_email does not look like an e-mail address: {self.alarm_email!r}")

    @property
    def is_prod(self) -> bool:
        return self.name == "prod"

    @property
    def removal_policy(self) -> RemovalPolicy:
        return RemovalPolicy.RETAIN if self.is_prod else RemovalPolicy.DESTROY

    @property
    def deletion_protection(self) -> bool:
        return self.is_prod

    @classmethod
    def from_context(cls, node: Node) -> StageConfig:
        """Read ``stage`` and ``alarm_email`` from CDK context (``-c stage=prod -c alarm_email=a@b.c``)."""
        stage = node.try_get_context("stage") or "dev"
        email = node.try_get_context("alarm_email") or None
        stuck = node.try_get_context("stuck_after_minutes")
        stuck = 30 if stuck is None or stuck == "" else stuck
        try:
            stuck_minutes = int(stuck)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"stuck_after_minutes must be an integer, got {stuck!r}") from exc
        return cls(name=str(stage), alarm_email=str(email) if email else None, stuck_after_minutes=stuck_minutes)
