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
import botocore.exceptions

from lambda_resilience.receive import MAX_WAIT_SECONDS
from ops.errors import OpsError

DEFAULT_STACK = "OrderPipeline-dev"


class TargetError(OpsError):
    """The target stack or one of its outputs cannot be found, or the endpoint is unusable."""


@dataclass(frozen=True)
class Target:
    """Resource names (from stack outputs) plus how to reach the API."""

    outputs: Mapping[str, str]
    region: str | None = None
    profile: str | None = None
    endpoint_url: str | None = None
    #: Each SQS read's long poll (``WaitTimeSeconds``): None, the library's (1 s; real SQS answers a short poll
    #: from a sample of its servers, so only long-polled empty answers end a read); 0 for a queue with one
    #: server (moto, the local emulator), where a short poll sees every message and a long one only waits.
    sqs_wait_seconds: int | None = None
    _session: Any = field(default=None, compare=False, repr=False)
    #: One client per service: building a client reads botocore's service model files, which a
    #: DLQ peek or replay would otherwise do for every message (boto3 clients are thread-safe).
    _clients: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    #: The session, once made: a new one parses botocore's service data again (about 260 ms of CPU per client).
    _made: list[Any] = field(default_factory=list, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.sqs_wait_seconds is not None and not 0 <= self.sqs_wait_seconds <= MAX_WAIT_SECONDS:
            raise ValueError(f"sqs_wait_seconds must be within 0..{MAX_WAIT_SECONDS}, got {self.sqs_wait_seconds}")

    def receive_wait(self, command_wait: int | None = None) -> dict[str, int]:
        """The keyword arguments of a DLQ read: the command's own ``--wait-seconds``, else this target's."""
        wait = self.sqs_wait_seconds if command_wait is None else command_wait
        return {} if wait is None else {"wait_seconds": wait}

    def output(self, name: str) -> str:
        try:
            return self.outputs[name]
        except KeyError:
            have = ", ".join(sorted(self.outputs)) or "none"
            raise TargetError(
                f"stack output {name!r} not found (outputs: {have}); is --stack the order pipeline's stack?"
            ) from None

    def client(self, service: str) -> Any:
        cached = self._clients.get(service)
        if cached is not None:
            return cached
        self._clients[service] = client = self._new_client(service)
        return client

    def session(self) -> Any:
        """The boto3 session this target's clients come from (its credentials sign other requests too)."""
        if self._session is not None:
            return self._session
        if not self._made:
            try:
                self._made.append(boto3.session.Session(profile_name=self.profile, region_name=self.region))
            except botocore.exceptions.ProfileNotFound:
                raise TargetError(f"AWS profile {self.profile!r} not found; check --profile") from None
        return self._made[0]

    def _new_client(self, service: str) -> Any:
        session = self.session()
        kwargs: dict[str, Any] = {}
        if self.endpoint_url:
            kwargs["endpoint_url"] = self.endpoint_url
        try:
            return session.client(service, **kwargs)
        except ValueError as exc:  # botocore: "Invalid endpoint: ..."
            raise TargetError(f"invalid --endpoint-url {self.endpoint_url!r}: {exc}") from None

    @classmethod
    def from_stack(
        cls,
        stack: str = DEFAULT_STACK,
        *,
        region: str | None = None,
        profile: str | None = None,
        endpoint_url: str | None = None,
        sqs_wait_seconds: int | None = None,
    ) -> Target:
        """Read the stack's outputs with CloudFormation DescribeStacks.

        Credential, region and endpoint errors propagate as botocore raises them (the CLI
        turns them into one line); a stack that does not exist is a :class:`TargetError`.
        """
        probe = cls({}, region, profile, endpoint_url)
        cloudformation = probe.client("cloudformation")
        try:
            stacks = cloudformation.describe_stacks(StackName=stack)["Stacks"]
        except botocore.exceptions.ClientError as exc:
            error = exc.response.get("Error", {})
            if error.get("Code") != "ValidationError":
                raise
            where = cloudformation.meta.region_name + (f" at {endpoint_url}" if endpoint_url else "")
            message = error.get("Message")
            raise TargetError(f"cannot read stack {stack!r} in {where}: {message}; check --stack") from None
        outputs = {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}
        if not outputs:
            raise TargetError(f"stack {stack!r} has no outputs; is it the order pipeline's stack?")
        return cls(outputs, region, profile, endpoint_url, sqs_wait_seconds)
