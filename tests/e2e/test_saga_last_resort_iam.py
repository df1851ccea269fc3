"""The saga's last resort under least privilege: its own module, because it deploys its own
pipeline from a stripped template (one local pipeline per process at a time)."""

from __future__ import annotations

import json as _json

import pytest

from harness.run.run import RunOptions, local_pipeline
from local_cloud.faults import ThrottledError
from local_cloud.template import CloudAssembly
from tests.e2e.test_saga_glue import (
    AccessDenied,
    entered,
    failing_status_move,
    needs_attention,
    new_order,
    only_execution,
    submit_and_drain,
)

pytestmark = pytest.mark.e2e


def test_saga_last_resort_needs_its_send_grant_and_fails_the_execution_anyway(
    assembly: CloudAssembly, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Least privilege, proven by use: without ``sqs:SendMessage`` on the needs-attention queue the
    state machine's last resort is denied (the local run enforces its role), and the execution
    still ends in the park's Fail state (ExecutionsFailed), never SUCCEEDED or left running."""
    outdir = tmp_path_factory.mktemp("no-last-resort-grant")
    template = _json.loads(_json.dumps(assembly.template))
    (machine_role,) = [
        r["Properties"]["RoleArn"]["Fn::GetAtt"][0]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::StepFunctions::StateMachine"
    ]
    removed = 0
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::IAM::Policy" or {"Ref": machine_role} not in resource["Properties"]["Roles"]:
            continue
        statements = resource["Properties"]["PolicyDocument"]["Statement"]
        kept = [s for s in statements if s["Action"] != "sqs:SendMessage"]
        removed += len(statements) - len(kept)
        resource["Properties"]["PolicyDocument"]["Statement"] = kept
    assert removed == 1
    name = f"{assembly.stack_name}.template.json"
    for entry in assembly.outdir.iterdir():
        if entry.name != name:
            (outdir / entry.name).symlink_to(entry)
    (outdir / name).write_text(_json.dumps(template))
    stripped = CloudAssembly(outdir, assembly.stack_name)

    with local_pipeline(RunOptions(assembly_dir=outdir), stripped) as run:
        with (
            failing_status_move("glue-deny", "COMPLETED", AccessDenied),
            failing_status_move("glue-deny", "NEEDS_ATTENTION", ThrottledError),
        ):
            submit_and_drain(run, new_order("glue-deny"), "cid-glue-deny")
        described = only_execution(run, "glue-deny")
        assert described["status"] == "FAILED" and described["error"] == "CompensationFailed"
        assert entered(described["executionArn"])[-3:] == [
            "MarkNeedsAttention",
            "NotifyNeedsAttention",
            "CompensationFailed",
        ]
        assert not [m for m in needs_attention(run, "glue-deny") if m.get("source") == "saga-last-resort"]
        assert run.deployment.iam is not None
        (machine,) = [p for p in run.deployment.iam.report().values() if p["kind"] == "state_machine"]
        assert [d["action"] for d in machine["denied"]["first"]] == ["sqs:SendMessage"]
