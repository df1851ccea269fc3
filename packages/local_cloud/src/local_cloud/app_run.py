"""Any synthesized app on the emulator: find its stack in a ``cdk.out``, deploy it, send to its queues, start its
state machines, inject throttles, drive it until it settles, and report what happened (``python -m local_cloud``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from local_cloud.errors import UsageError
from local_cloud.template import CloudAssembly

#: Alarm notifications that page a person (INSUFFICIENT_DATA pages only where an alarm notifies on it).
PAGE_STATES = ("ALARM", "INSUFFICIENT_DATA")
#: A queue's depth: visible and in-flight messages.
DEPTH_ATTRIBUTES = ("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible")


def open_assembly(outdir: Path, stack: str) -> CloudAssembly:
    """The stack ``stack`` of the cloud assembly in ``outdir``; :class:`UsageError` saying what to do when either
    is missing."""
    manifest = Path(outdir) / "manifest.json"
    if not manifest.is_file():
        raise UsageError(f"no cloud assembly at {outdir} (no manifest.json): run `cdk synth` first, or pass cdk.out")
    artifacts: dict[str, Any] = json.loads(manifest.read_text()).get("artifacts", {})
    stack_artifacts = {key: a for key, a in artifacts.items() if a.get("type") == "aws:cloudformation:stack"}
    for artifact_id, artifact in stack_artifacts.items():
        if stack in (artifact_id, artifact.get("properties", {}).get("stackName")):
            return CloudAssembly(Path(outdir), artifact_id)
    known = ", ".join(sorted(stack_artifacts)) or "none"
    raise UsageError(f"no stack '{stack}' in the cloud assembly at {outdir} (its stacks: {known})")


def pick(kind: str, name: str, known: Mapping[str, str], secondary: Collection[str] = ()) -> str:
    """The physical name or ARN of the resource ``name`` names: its logical ID, a prefix of it (the construct's ID,
    before the CDK's hash), or its physical name. A prefix matching several, all but one ``secondary`` (logical
    IDs: e.g. dead-letter queues, whose construct IDs start with their queue's), names that one."""
    if name in known:
        return known[name]
    prefixed = [k for k in known if k.startswith(name)]
    matches = {known[k] for k in prefixed} | {v for v in known.values() if v.rsplit(":", 1)[-1] == name}
    primary = {known[k] for k in prefixed if k not in secondary}
    if len(matches) == 1 or len(primary) == 1:
        return (matches if len(matches) == 1 else primary).pop()
    found, names = "several" if matches else "none", ", ".join(sorted(known))
    raise UsageError(f"--{kind} {name}: {found} of the stack's {kind} targets match (known: {names})")


def split_pair(option: str, text: str) -> tuple[str, str]:
    """``NAME=VALUE`` (``VALUE`` may be ``@file``: the file's text)."""
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise UsageError(f"--{option} {text!r}: expected NAME=VALUE (VALUE may be @file)")
    if value.startswith("@"):
        path = Path(value[1:])
        if not path.is_file():
            raise UsageError(f"--{option} {name}: no file {path}")
        value = path.read_text()
    return name, value


@dataclass(frozen=True)
class RunPlan:
    """What ``run`` does once the app is deployed."""

    send: list[tuple[str, str]] = field(default_factory=list)  # (queue, body)
    start: list[tuple[str, str]] = field(default_factory=list)  # (state machine, input JSON)
    throttle: list[tuple[str, int]] = field(default_factory=list)  # (table, first N item calls)
    timeout_seconds: float = 60.0
    echo_logs: bool = False


@contextmanager
def throttles(plan: RunPlan, tables: Mapping[str, str]) -> Iterator[dict[str, int]]:
    """The first N DynamoDB item calls on each named table answer ProvisionedThroughputExceededException."""
    from local_cloud.faults import FaultCounter, throttle_dynamodb

    left = {pick("throttle", name, tables): count for name, count in plan.throttle}
    counter = FaultCounter()

    def predicate(method: str, table: str, attrs: dict[str, Any]) -> bool:
        if left.get(table, 0) > 0:
            left[table] -= 1
            return True
        return False

    with ExitStack() as stack:
        if left:
            stack.enter_context(throttle_dynamodb(predicate, counter))
        yield counter.injected


def start_all(plan: RunPlan, cloud: Any) -> list[str]:
    """Send the plan's messages and start its executions; the execution ARNs."""
    from local_cloud.clients import aws

    deployment = cloud.deployment
    urls = {logical: q["url"] for logical, q in deployment.queues.items()}
    for queue, body in plan.send:
        # A ResilientQueue "Jobs" is JobsQueue... and JobsDlq...: "Jobs" names the queue, "JobsDlq" its DLQ.
        aws("sqs").send_message(QueueUrl=pick("send", queue, urls, deployment.dlq_ids), MessageBody=body)
    arns = []
    for number, (machine, text) in enumerate(plan.start, start=1):
        arn = pick("start", machine, deployment.state_machines)
        try:
            json.loads(text)
        except ValueError:
            raise UsageError(f"--start {machine}: the input is not JSON: {text[:60]!r}") from None
        arns.append(
            aws("stepfunctions").start_execution(stateMachineArn=arn, name=f"execution-{number}", input=text)[
                "executionArn"
            ]
        )
    return arns


def execution_report(arn: str, events: list[dict[str, Any]]) -> dict[str, Any]:
    """An execution's name, status, the states it entered in order, and the errors its tasks failed with
    (a failure followed by the same state succeeding was retried)."""
    from local_cloud.clients import aws

    described = aws("stepfunctions").describe_execution(executionArn=arn)
    failed = [
        e[key]["error"]
        for e in events
        for key in ("taskFailedEventDetails", "lambdaFunctionFailedEventDetails")
        if key in e and "error" in e[key]
    ]
    return {
        "name": arn.rsplit(":", 1)[-1],
        "status": described["status"],
        "error": described.get("error"),
        "states": [e["stateEnteredEventDetails"]["name"] for e in events if e["type"].endswith("StateEntered")],
        "task_failures": failed,
    }


def report(cloud: Any, faults: Mapping[str, int]) -> dict[str, Any]:
    """What the run did: executions, invocations (and errors) per function, queue depths, alarms, pages."""
    from local_cloud.clients import aws
    from local_cloud.histories import execution_histories

    deployment = cloud.deployment
    executions = [
        execution_report(arn, events)
        for machine in deployment.state_machines.values()
        for arn, events in reversed(execution_histories(machine))
    ]
    depth = {}
    for logical, queue in deployment.queues.items():
        attrs = aws("sqs").get_queue_attributes(QueueUrl=queue["url"], AttributeNames=[*DEPTH_ATTRIBUTES])["Attributes"]
        depth[logical] = sum(int(v) for v in attrs.values())
    notices = cloud.alarm_actions.history
    return {
        "stack": deployment.stack,
        "executions": executions,
        "invocations": {name: len(fn.history) for name, fn in deployment.functions.items() if fn.history},
        "function_errors": {name: n for name, fn in deployment.functions.items() if (n := _errors(fn))},
        "queues": depth,
        "alarms_in_alarm": cloud.evaluate_alarms(),
        "pages": [
            {"alarm": n.alarm, "state": n.state, "reason": n.reason, "delivered": n.delivered}
            for n in notices
            if n.state in PAGE_STATES
        ],
        "faults": dict(faults),
    }


def _errors(fn: Any) -> int:
    return sum(1 for _, errored in fn.history if errored)


def run_app(assembly: CloudAssembly, plan: RunPlan) -> dict[str, Any]:
    """Deploy ``assembly`` into moto in this process, run ``plan`` until the app settles, and report."""
    from local_cloud.clock import SimClock
    from local_cloud.driver import Driver
    from local_cloud.emulator import EmulatorOptions, LocalCloud
    from local_cloud.environment import local_aws

    clock = SimClock()
    with local_aws(clock):
        cloud = LocalCloud(assembly, clock, EmulatorOptions(echo_logs=plan.echo_logs))
        with cloud.running(), throttles(plan, cloud.deployment.tables) as faults:
            start_all(plan, cloud)
            Driver(cloud).drain(plan.timeout_seconds)
            return report(cloud, faults)
