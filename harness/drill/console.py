"""The drill's terminal: ``python -m ops`` commands typed against the local stack, each one's AWS calls counted.

The commands run through the operator CLI's own entry point (:func:`ops.cli.main`, its output as an on-call
reads it), against a :class:`~ops.target.Target` whose boto3 session carries a botocore ``before-call`` hook:
every API call the command makes is counted as ``Service.Operation``
(https://boto3.amazonaws.com/v1/documentation/api/latest/guide/events.html). ``--stack`` resolves to that target
without CloudFormation: on AWS each command makes one more call, ``DescribeStacks``, the same at any history size.
"""

from __future__ import annotations

import io
from collections import Counter
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

import boto3

from harness.drill.judge import CommandRun
from ops.target import Target


class OpsConsole:
    """Runs ``ops`` commands on the drill's stack; the calls of the last one in :attr:`calls`."""

    def __init__(self, outputs: dict[str, str], region: str, stack: str) -> None:
        self.stack = stack
        self.calls: list[str] = []
        self.session = boto3.session.Session(region_name=region)
        self.session.events.register("before-call", self._count)
        # The local stack's SQS is one server: its DLQ reads short-poll (the same calls, without a long poll's wait).
        self.target = Target(outputs, region=region, sqs_wait_seconds=0, _session=self.session)
        self.typed: list[CommandRun] = []

    def _count(self, model: Any, **_: Any) -> None:
        self.calls.append(f"{model.service_model.service_id}.{model.name}")

    def run(self, *argv: str, question: str = "") -> CommandRun:
        """``python -m ops <argv> --stack <stack>``: its exit status, output and AWS calls."""
        from ops.cli import main

        self.calls.clear()
        out, err = io.StringIO(), io.StringIO()
        target = self.target
        with (
            redirect_stdout(out),
            redirect_stderr(err),
        ):
            code = main([*argv, "--stack", self.stack], target=target)
        command = CommandRun(
            argv=tuple(argv),
            calls=len(self.calls),
            operations=dict(Counter(self.calls)),
            exit_code=code,
            output=out.getvalue() + err.getvalue(),
            question=question,
        )
        self.typed.append(command)
        return command
