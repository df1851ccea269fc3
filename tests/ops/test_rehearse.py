"""``tools/rehearse.py``: the environment it deploys with, and failures that name their step."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tools import rehearse


def test_rehearse_environment_points_everything_at_the_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_PROFILE", "production")
    monkeypatch.setenv("AWS_ENDPOINT_URL_SQS", "https://sqs.example.com")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "real-session")
    env = rehearse.local_environment("http://127.0.0.1:4599")
    assert env["AWS_ENDPOINT_URL"] == "http://127.0.0.1:4599"
    assert (env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], env["AWS_REGION"]) == ("test", "test", "us-east-1")
    assert not {"AWS_PROFILE", "AWS_ENDPOINT_URL_SQS", "AWS_SESSION_TOKEN"} & set(env)
    assert "127.0.0.1" in env["NO_PROXY"].split(",")


def test_rehearse_environment_keeps_the_cdk_cli_from_calling_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CDK CLI looks up its telemetry endpoint (cdk-cli-telemetry.us-east-1.api.aws; strace, 2026-11-28) and
    fetches notices unless told not to: no call may leave the machine."""
    monkeypatch.delenv("CDK_DISABLE_CLI_TELEMETRY", raising=False)
    env = rehearse.local_environment("http://127.0.0.1:4599")
    assert env["CDK_DISABLE_CLI_TELEMETRY"] == "1"
    assert env["CDK_DISABLE_VERSION_CHECK"] == "1"
    assert rehearse.CDK[:3] == ["npx", "--no-install", "cdk"]
    assert "--no-notices" in rehearse.CDK


def test_rehearse_start_failure_names_the_step_and_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rehearse, "REHEARSE_DIR", tmp_path)
    broken = tmp_path / "ministack"
    broken.write_text("#!/bin/sh\necho 'no such module' >&2\nexit 3\n")
    broken.chmod(broken.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / "ministack.log"
    with pytest.raises(rehearse.StepFailed, match=r"start MiniStack: exited with status 3 \(log: .*ministack.log\)"):
        rehearse.start_ministack(broken, rehearse.free_port(), log)
    assert "no such module" in log.read_text()
    with pytest.raises(rehearse.StepFailed, match="not found"):
        rehearse.start_ministack(tmp_path / "missing", rehearse.free_port(), log)


def test_rehearse_step_failure_and_timeout_name_the_step() -> None:
    env = rehearse.local_environment("http://127.0.0.1:9")
    with pytest.raises(rehearse.StepFailed, match=r"^cdk deploy: exit status 2$"):
        rehearse.run_step("cdk deploy", [sys.executable, "-c", "raise SystemExit(2)"], env, 30)
    with pytest.raises(rehearse.StepFailed, match=r"^ops smoke: no answer within 1 s$"):
        rehearse.run_step("ops smoke", [sys.executable, "-c", "import time; time.sleep(5)"], env, 1)


CHILD_AND_GRANDCHILD = (
    "import subprocess, sys, time; "
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
)


def test_rehearse_stop_ends_the_whole_process_group() -> None:
    server = subprocess.Popen(
        [
            sys.executable,
            "-c",
            CHILD_AND_GRANDCHILD,
        ],
        start_new_session=True,
    )
    rehearse.stop(server)
    assert server.returncode is not None
    rehearse.stop(server)  # stopping twice is harmless


def test_rehearse_single_metric_alarms_rewrites_only_metric_math() -> None:
    stat = {
        "Metric": {"MetricName": "Errors", "Namespace": "AWS/Lambda", "Dimensions": [1]},
        "Period": 60,
        "Stat": "Sum",
    }
    math = {
        "Type": "AWS::CloudWatch::Alarm",
        "Properties": {"Metrics": [{"Id": "e", "Expression": "x"}, {"MetricStat": stat}]},
    }
    plain = {"Type": "AWS::CloudWatch::Alarm", "Properties": {"MetricName": "Age"}}
    template = {"Resources": {"Math": math, "Plain": plain, "Queue": {"Type": "AWS::SQS::Queue"}}}

    assert rehearse.single_metric_alarms(template) == ["Math"]
    assert math["Properties"] == {
        "MetricName": "Errors",
        "Namespace": "AWS/Lambda",
        "Dimensions": [1],
        "Period": 60,
        "Statistic": "Sum",
    }
    assert plain["Properties"] == {"MetricName": "Age"}
