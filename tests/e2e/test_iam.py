"""Least privilege, proven by use: the local run checks every call against the template's roles."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.run.run import RunOptions, aws, local_pipeline, run_local
from local_cloud.template import CloudAssembly

pytestmark = pytest.mark.e2e

ORDERS = 6


def _intake(report: dict[str, Any]) -> dict[str, Any]:
    (name,) = [n for n in report["iam"] if "IntakeFunction" in n]
    entry: dict[str, Any] = report["iam"][name]
    return entry


def without_grant(assembly: CloudAssembly, function_prefix: str, action: str, outdir: Path) -> int:
    """A copy of the assembly (assets linked) whose function's role no longer grants ``action``.

    Returns how many statements lost it."""
    template = json.loads(json.dumps(assembly.template))
    resources = template["Resources"]
    (function,) = [
        r for lid, r in resources.items() if lid.startswith(function_prefix) and r["Type"] == "AWS::Lambda::Function"
    ]
    role = function["Properties"]["Role"]["Fn::GetAtt"][0]
    removed = 0
    for r in resources.values():
        if r["Type"] != "AWS::IAM::Policy" or {"Ref": role} not in r["Properties"]["Roles"]:
            continue
        statements = r["Properties"]["PolicyDocument"]["Statement"]
        for s in statements:
            actions = s["Action"] if isinstance(s["Action"], list) else [s["Action"]]
            if action in actions:
                s["Action"] = [a for a in actions if a != action]
                removed += 1
        r["Properties"]["PolicyDocument"]["Statement"] = [s for s in statements if s["Action"]]
    template_name = f"{assembly.stack_name}.template.json"
    for entry in assembly.outdir.iterdir():
        if entry.name != template_name:
            (outdir / entry.name).symlink_to(entry)
    (outdir / template_name).write_text(json.dumps(template))
    return removed


@pytest.fixture(scope="module")
def granted(assembly: CloudAssembly) -> dict[str, Any]:
    return run_local(RunOptions(orders=ORDERS, seed=5, assembly_dir=assembly.outdir))


@pytest.fixture(scope="module")
def denied(assembly: CloudAssembly, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    outdir = tmp_path_factory.mktemp("no-start-execution")
    assert without_grant(assembly, "Intake", "states:StartExecution", outdir) == 1
    return run_local(RunOptions(orders=ORDERS, seed=5, assembly_dir=outdir))


def test_the_template_grants_every_call(granted: dict[str, Any]) -> None:
    assert granted["orders"]["completed"] > 0
    assert granted["invariants"]["no_call_denied_by_iam"] is None
    for name, entry in granted["iam"].items():
        assert entry["denied"]["count"] == 0, name
        assert entry["unmapped"]["count"] == 0, name
    assert _intake(granted)["calls"] > 0
    (machine,) = [e for e in granted["iam"].values() if e["kind"] == "state_machine"]
    assert machine["calls"] > 0
    assert not [g for g in _intake(granted)["granted_unused"] if g["action"] == "states:StartExecution"]


def test_a_missing_grant_fails_the_local_run_with_access_denied(denied: dict[str, Any]) -> None:
    assert denied["orders"]["completed"] == 0
    assert denied["executions"] == {}
    intake = _intake(denied)
    assert intake["denied"]["count"] > 0
    first = intake["denied"]["first"][0]
    assert first["action"] == "states:StartExecution"
    assert ":stateMachine:" in first["resource"]
    failure = denied["invariants"]["no_call_denied_by_iam"]
    assert failure is not None and "states:StartExecution" in failure
    # The handler saw AWS's error: it logged the AccessDeniedException and the record failed.
    assert denied["event_sources"][next(n for n in denied["event_sources"] if "Intake" in n)]["failed_records"] > 0


def test_the_scheduled_dlq_replay_uses_its_grants(assembly: CloudAssembly) -> None:
    """The chaos run replays through the operator CLI; the scheduled function is proven here."""
    with local_pipeline(RunOptions(assembly_dir=assembly.outdir), assembly) as run:
        assert run.deployment.iam is not None
        dlq = next(q for lid, q in run.deployment.queues.items() if lid.startswith("OrdersQueueDlq"))
        transient = {"dlq_category": {"DataType": "String", "StringValue": "transient"}}
        aws("sqs").send_message(QueueUrl=dlq["url"], MessageBody='{"order_id": "o-1"}', MessageAttributes=transient)
        aws("sqs").send_message(QueueUrl=dlq["url"], MessageBody='{"order_id": "o-2"}')  # redriven: no category
        (result,) = run.run_schedules(only="DlqReplay")
        entry = run.deployment.iam.report()[run.deployment.function("DlqReplay").name]
    assert len(json.loads(result)[dlq["url"]]["replayed"]) == 1
    assert entry["denied"]["count"] == 0 and entry["calls"] > 0
    unused = {g["action"] for g in entry["granted_unused"]}
    used = {"sqs:ReceiveMessage", "sqs:SendMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"}
    assert not unused & (used | {"dynamodb:GetItem", "logs:PutLogEvents"})
