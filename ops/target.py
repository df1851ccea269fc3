"""Where an ops command acts: a deployed stack (names from its outputs) or a local endpoint.

One code path for both: every command takes a :class:`Target`, built either from
CloudFormation stack outputs (``--stack``, ``--region``, ``--profile``) or from a local
deployment's resolved outputs, and makes its AWS calls through ``Target.client``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import boto3

DEFAULT_STACK = "OrderPipeline-dev"


class TargetError(Exception):
    """The target stack or one of its outputs cannot be found."""


@dataclass(frozen=True)
class Target:
    """Resource names (from stack outputs) plus how to reach the API."""

    outputs: Mapping[str, str]
    region: str | None = None
    profile: str | None = None
    endpoint_url: str | None = None
    _session: Any = field(default=None, compare=False, repr=False)

    def output(self, name: str) -> str:
        try:
            return self.outputs[name]
        except KeyError:
            raise TargetError(f"stack output {name!r} not found (have: {sorted(self.outputs)})") from None

    def client(self, service: str) -> Any:
        session = self._session or boto3.session.Session(profile_name=self.profile, region_name=self.region)
        kwargs: dict[str, Any] = {}
        if self.endpoint_url:
            kwargs["endpoint_url"] = self.endpoint_url
        return session.client(service, **kwargs)

    @classmethod
    def from_stack(
        cls,
        stack: str = DEFAULT_STACK,
        *,
        region: str | None = None,
        profile: str | None = None,
        endpoint_url: str | None = None,
    ) -> Target:
        """Read the stack's outputs with CloudFormation DescribeStacks."""
        probe = cls({}, region, profile, endpoint_url)
        try:
            stacks = probe.client("cloudformation").describe_stacks(StackName=stack)["Stacks"]
        except Exception as exc:  # botocore raises several shapes; all mean "not reachable/found"
            raise TargetError(f"cannot read stack {stack!r}: {exc}") from exc
        outputs = {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}
        return cls(outputs, region, profile, endpoint_url)
