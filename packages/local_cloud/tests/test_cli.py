"""``python -m local_cloud up|run --assembly <cdk.out> --stack <name>``: any synthesized app deployed and run.

The app here is no one's: a queue feeding a function that writes to a table, and a state machine invoking that
function, synthesized with the CDK into a temporary ``cdk.out``. A mistake in the arguments is one line on stderr,
exit status 2, no traceback.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from local_cloud.cli import main

STACK = "AnyApp"
HANDLER = """
import os, boto3

def handler(event, context):
    notes = [r["body"] for r in event["Records"]] if "Records" in event else [event["note"]]
    table = boto3.client("dynamodb")
    for note in notes:
        table.put_item(TableName=os.environ["TABLE"], Item={"id": {"S": note}})
    return {"written": len(notes)}
"""


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("anyapp")
    code = root / "code"
    code.mkdir()
    (code / "notes.py").write_text(HANDLER)
    outdir = root / "cdk.out"
    app = App(outdir=str(outdir), context={"aws:cdk:enable-asset-metadata": True})
    stack = Stack(app, STACK)
    table = dynamodb.Table(
        stack, "Notes", partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING)
    )
    fn = lambda_.Function(
        stack,
        "Writer",
        runtime=lambda_.Runtime.PYTHON_3_13,
        handler="notes.handler",
        code=lambda_.Code.from_asset(str(code)),
        timeout=Duration.seconds(10),
        environment={"TABLE": table.table_name},
    )
    table.grant_write_data(fn)
    # A dead-letter queue whose ID starts with its queue's (as constructs_lib's ResilientQueue names them).
    dlq = sqs.Queue(stack, "InboxDlq")
    queue = sqs.Queue(
        stack,
        "Inbox",
        visibility_timeout=Duration.seconds(60),
        dead_letter_queue=sqs.DeadLetterQueue(max_receive_count=3, queue=dlq),
    )
    fn.add_event_source(sources.SqsEventSource(queue))
    write = tasks.LambdaInvoke(stack, "Write", lambda_function=fn)
    sfn.StateMachine(stack, "Flow", definition_body=sfn.DefinitionBody.from_chainable(write))
    app.synth()
    return outdir


def test_cli_missing_assembly_is_one_line_with_status_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["run", "--assembly", str(tmp_path / "cdk.out"), "--stack", STACK])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and "no cloud assembly" in err and "cdk synth" in err, err


def test_cli_missing_stack_is_one_line_with_status_2(assembly: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["up", "--assembly", str(assembly), "--stack", "Elsewhere"])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and "no stack 'Elsewhere'" in err and STACK in err, err


def test_cli_module_entry_point_answers_status_2_without_traceback(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "local_cloud", "run", "--assembly", str(tmp_path), "--stack", STACK],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and done.stderr.startswith("local_cloud:"), done.stderr


def test_cli_run_drives_queues_functions_and_state_machines(assembly: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(
        [
            "run",
            "--assembly",
            str(assembly),
            "--stack",
            STACK,
            "--send",
            "Inbox=hello",
            "--start",
            'Flow={"note": "from-the-flow"}',
        ]
    )
    report = json.loads(capsys.readouterr().out)
    assert status == 0, report
    assert report["stack"] == STACK
    (execution,) = report["executions"]
    assert execution["status"] == "SUCCEEDED" and execution["states"] == ["Write"]
    assert sum(report["invocations"].values()) == 2
    assert all(depth == 0 for depth in report["queues"].values())
    assert report["pages"] == []


def test_cli_run_send_to_a_prefix_matching_a_queue_and_its_dlq_reaches_the_queue(
    assembly: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``Inbox`` is a prefix of the queue's logical ID and of its DLQ's: the message goes to the queue (a DLQ is
    no intake); the DLQ is reached by its own name."""
    args = ["--send", "Inbox=to-the-queue", "--send", "InboxDlq=to-the-dlq"]
    status = main(["run", "--assembly", str(assembly), "--stack", STACK, *args])
    report = json.loads(capsys.readouterr().out)
    assert status == 0, report
    assert sum(report["invocations"].values()) == 1  # the queue's message, consumed
    depths = {name.removeprefix("InboxDlq") != name: depth for name, depth in report["queues"].items()}
    assert depths == {True: 1, False: 0}, report["queues"]


@pytest.mark.parametrize("throttled", [1, 11])
def test_cli_run_throttle_is_retried_by_the_sdk_then_by_the_event_source(
    assembly: Path, capsys: pytest.CaptureFixture[str], throttled: int
) -> None:
    """One throttled call: botocore's own retries absorb it. Eleven (more than one invocation's SDK attempts): the
    invocation fails, and SQS delivers the message again after its visibility timeout (simulated time)."""
    args = ["--send", "Inbox=n1", "--throttle", f"Notes={throttled}"]
    status = main(["run", "--assembly", str(assembly), "--stack", STACK, *args])
    report = json.loads(capsys.readouterr().out)
    assert status == 0, report
    assert report["faults"] == {"throttle": throttled}
    invocations = sum(report["invocations"].values())
    assert (invocations == 1) if throttled == 1 else (invocations > 1)
    assert sum(report["function_errors"].values()) == invocations - 1
    assert all(depth == 0 for depth in report["queues"].values())
