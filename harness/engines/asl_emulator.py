"""The saga's paths run by the emulator: moto's Step Functions interpreter with local_cloud's behaviour (simulated
retry waits, AWS's task error names), each Task a stub function that fails as its path says.

Every path is one execution, started :data:`BATCH` at a time; the simulated clock is stepped whenever every
running execution waits (a Retry's wait), as a local run does. Each execution's history gives the :class:`Run`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import boto3

from harness.engines.asl_paths import INPUT, STUB_RESULT, Run, stub_definition
from harness.engines.asl_paths import Path as SagaPath
from local_cloud.clock import SimClock
from local_cloud.environment import local_aws
from local_cloud.histories import execution_histories
from local_cloud.lambda_runtime import LocalFunction, route_invocations
from local_cloud.sfn_waits import running_executions
from local_cloud.template import REGION

STUB = '''"""A Task stub: fails with the error its path names for this state, else returns the stub result."""
import json, os, re
from pathlib import Path

OUTCOMES = json.loads((Path(__file__).parent / "outcomes.json").read_text())


def handler(event, context):
    path = re.search(r"engines-path-(\\d+)", json.dumps(event)).group(1)
    error = OUTCOMES[str(int(path))].get(os.environ["ENGINES_STATE"])
    if error:
        raise type(error, (Exception,), {})("stubbed failure")
    return json.loads(os.environ["ENGINES_RESULT"])
'''
#: Wall seconds a path may take (simulated retry waits pass at once when every execution waits).
DEADLINE = 60.0
#: Executions run at once. One: each path's clock is its own. All 97 at once is ~8 s faster, but under load the
#: emulator then recorded, twice in one run of 97, a sixth retry of CancelShipment (MaxAttempts 5) where
#: aws-local-stepfunctions retried 5 times: open, docs/engines.md.
BATCH = 1


def execution_input(index: int) -> dict[str, Any]:
    """The input of path ``index``: the saga's fields, the order ID naming the path (the stub reads it)."""
    return {**INPUT, "order_id": f"engines-path-{index:03d}"}


def _run_from_history(events: list[dict[str, Any]], described: Mapping[str, Any]) -> Run:
    entered: list[str] = []
    attempts: dict[str, int] = {}
    for event in events:
        details = event.get("stateEnteredEventDetails")
        if details:
            entered.append(details["name"])
        elif event["type"] == "LambdaFunctionScheduled" and entered:
            attempts[entered[-1]] = attempts.get(entered[-1], 0) + 1
    retries = {state: n - 1 for state, n in attempts.items() if n > 1}
    return Run(entered, retries, str(described["status"]), described.get("error"))


def _step_until_done(clock: SimClock) -> None:
    deadline = time.monotonic() + DEADLINE
    while running := running_executions():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(running)} executions still running after {DEADLINE} s")
        seen = clock.waits_generation
        target = clock.earliest_wait(running)
        if target is not None:
            clock.advance(max(0.0, target - clock.now()))
        else:
            clock.wait_for_waits(seen, 0.05)


def run_paths(definition: dict[str, Any], paths: list[SagaPath], workdir: Path) -> list[Run]:
    """Each path's :class:`Run` on the emulator."""
    from local_cloud.capture import LineCapture

    stubbed = stub_definition(definition)
    tasks = [name for name, s in stubbed["States"].items() if s["Type"] == "Task"]
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "stub.py").write_text(STUB)
    (workdir / "outcomes.json").write_text(json.dumps({str(i): p.outcomes for i, p in enumerate(paths)}))
    clock = SimClock()
    functions = {
        f"stub-{t}": LocalFunction(
            t,
            f"stub-{t}",
            workdir,
            "stub.handler",
            {"ENGINES_STATE": t, "ENGINES_RESULT": json.dumps(STUB_RESULT)},
            900.0,
            128,
            [],
            clock,
            LineCapture(),
        )
        for t in tasks
    }
    with local_aws(clock), route_invocations(functions):
        role = boto3.client("iam").create_role(RoleName="engines", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        awslambda = boto3.client("lambda", region_name=REGION)
        for name in functions:
            awslambda.create_function(
                FunctionName=name, Runtime="python3.13", Role=role, Handler="stub.handler", Code={"ZipFile": b"PK"}
            )
        sfn = boto3.client("stepfunctions", region_name=REGION)
        machine = sfn.create_state_machine(name="engines-saga", definition=json.dumps(stubbed), roleArn=role)
        arns = []
        for first in range(0, len(paths), BATCH):
            for i in range(first, min(first + BATCH, len(paths))):
                arns.append(
                    sfn.start_execution(
                        stateMachineArn=machine["stateMachineArn"],
                        name=f"engines-path-{i:03d}",
                        input=json.dumps(execution_input(i)),
                    )["executionArn"]
                )
            _step_until_done(clock)
        histories = dict(execution_histories(machine["stateMachineArn"]))
        return [_run_from_history(histories[arn], sfn.describe_execution(executionArn=arn)) for arn in arns]
