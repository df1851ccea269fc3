"""Operator mistakes: one line on stderr, ``python -m ops: error: ...``, exit status 2, no traceback; the same
for the workshop's entry point (``python -m harness: error: ...``: local runs, capacity)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import boto3
import pytest

from harness.cli import main as workshop_main
from harness.faults.chaos import FaultRates
from harness.workload.orders import OrderMix
from ops.cli import main
from ops.errors import InvalidRates, OpsError
from ops.target import TargetError

REPO_ROOT = Path(__file__).resolve().parents[2]
PREFIX = "python -m ops: error: "
WORKSHOP_PREFIX = "python -m harness: error: "


def _cli(argv: list[str]) -> tuple[Callable[[list[str]], int], str]:
    """The entry point that answers ``argv`` in process: the workshop's for local runs, else the operator CLI's."""
    return (workshop_main, WORKSHOP_PREFIX) if argv[:1] == ["local"] else (main, PREFIX)


def one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Run ``main(argv)``; assert exit status 2 and exactly one stderr line; return that line."""
    run, prefix = _cli(argv)
    code = run(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(prefix) and "Traceback" not in err
    return lines[0][len(prefix) :]


def parse_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """argparse mistakes exit (SystemExit 2) with one line too."""
    run, prefix = _cli(argv)
    with pytest.raises(SystemExit) as exited:
        run(argv)
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert len(err.splitlines()) == 1 and err.startswith(prefix), err
    return err[len(prefix) :].strip()


@pytest.fixture
def no_aws_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No credentials, region or config anywhere (and no instance metadata lookup: no network)."""
    names = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_PROFILE")
    for name in names:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_cli_unknown_quota_from_the_emulator_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    """local_cloud raises its own LocalCloudError; the CLI prints it as an operator mistake."""
    message = one_line_error(capsys, ["local", "run", "--quota", "nope=1"])
    assert message.startswith("--quota 'nope=1': unknown quota 'nope'")


def test_cli_order_mix_over_one_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    message = one_line_error(capsys, ["local", "run", "--decline-rate", "0.7", "--ship-fail-rate", "0.5"])
    assert "adds up to more than 1" in message
    assert "--decline-rate 0.7" in message and "--ship-fail-rate 0.5" in message


def test_cli_order_mix_over_one_is_an_ops_error_and_a_value_error() -> None:
    with pytest.raises(InvalidRates, match="more than 1") as raised:
        OrderMix(decline_rate=0.6, ship_fail_rate=0.6)
    assert isinstance(raised.value, OpsError) and isinstance(raised.value, ValueError)
    with pytest.raises(InvalidRates, match=r"--hostile-rate must be within 0\.\.1, got 2"):
        FaultRates(hostile=2)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["local", "run", "--orders", "0"], "argument --orders: must be >= 1, got 0"),
        (["local", "run", "--orders", "many"], "argument --orders: expected an integer, got 'many'"),
        (["local", "run", "--hostile-rate", "1.5"], "argument --hostile-rate: a rate is within 0..1, got 1.5"),
        (["local", "run", "--crash-rate", "nan"], "argument --crash-rate: a rate is within 0..1, got nan"),
        (["local", "run", "--workers", "-1"], "argument --workers: must be >= 1, got -1"),
        (["dlq", "replay", "--queue", "orders", "--max", "0"], "argument --max: must be >= 1, got 0"),
        (["dlq", "replay", "--queue", "orders", "--rate", "0"], "argument --rate: must be > 0, got 0"),
        (["dlq", "replay", "--queue", "ordrs"], "argument --queue: invalid choice: 'ordrs'"),
        (["dlq", "replay", "--queue", "orders", "--category", "bugs"], "argument --category: invalid choice: 'bugs'"),
        (["local", "up", "--port", "70000"], "argument --port: a port is within 0..65535, got 70000"),
        (["dlq"], "the following arguments are required: dlq_command"),
    ],
)
def test_cli_invalid_value_is_one_line(capsys: pytest.CaptureFixture[str], argv: list[str], expected: str) -> None:
    assert parse_error(capsys, argv).startswith(expected)


def test_cli_permanent_replay_without_force_is_refused_before_any_aws_call(
    capsys: pytest.CaptureFixture[str], no_aws_settings: None
) -> None:
    # no credentials at all: the refusal comes first
    message = one_line_error(capsys, ["dlq", "replay", "--queue", "orders", "--category", "permanent"])
    assert "--force" in message


def test_cli_unknown_queue_in_the_api_is_an_ops_error() -> None:
    from ops.dlq import check_replay_request

    with pytest.raises(TargetError, match="unknown queue 'ordrs'; choose from needs-attention, orders"):
        check_replay_request("ordrs", "transient", force=False, dry_run=False)


def test_cli_unknown_stack_is_one_line(capsys: pytest.CaptureFixture[str], aws: None) -> None:
    message = one_line_error(capsys, ["dlq", "list", "--stack", "NoSuchStack", "--region", "us-east-1"])
    assert message.startswith("cannot read stack 'NoSuchStack' in us-east-1") and "check --stack" in message


def test_cli_stack_without_the_pipeline_outputs_is_one_line(capsys: pytest.CaptureFixture[str], aws: None) -> None:
    template = {
        "Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "q"}}},
        "Outputs": {"Something": {"Value": "else"}},
    }
    boto3.client("cloudformation").create_stack(StackName="Other", TemplateBody=json.dumps(template))
    message = one_line_error(capsys, ["dlq", "list", "--stack", "Other", "--region", "us-east-1"])
    assert "stack output 'OrdersDlqUrl' not found (outputs: Something)" in message


def test_cli_no_credentials_is_one_line(capsys: pytest.CaptureFixture[str], no_aws_settings: None) -> None:
    message = one_line_error(capsys, ["trace", "cid-1", "--region", "eu-west-1"])
    assert message.startswith("no usable AWS credentials") and "--endpoint-url" in message


def test_cli_no_region_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, no_aws_settings: None
) -> None:
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.delenv("AWS_REGION", raising=False)
    assert one_line_error(capsys, ["repair", "order-1"]) == "no AWS region: pass --region or configure a default region"


def test_cli_unknown_profile_is_one_line(capsys: pytest.CaptureFixture[str], no_aws_settings: None) -> None:
    assert "profile 'ghost'" in one_line_error(capsys, ["dlq", "list", "--profile", "ghost"])


def test_cli_unreachable_endpoint_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    message = one_line_error(capsys, ["dlq", "list", "--endpoint-url", f"http://127.0.0.1:{port}"])
    assert message.startswith(f"cannot connect to http://127.0.0.1:{port}") and "--endpoint-url" in message


def test_cli_invalid_endpoint_url_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert one_line_error(capsys, ["trace", "c", "--endpoint-url", "localhost 4566"]).startswith(
        "invalid --endpoint-url 'localhost 4566'"
    )


def test_cli_empty_correlation_id_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert one_line_error(capsys, ["trace", "  "]) == "a correlation ID is required"


def test_cli_bug_keeps_its_traceback(monkeypatch: pytest.MonkeyPatch, aws: None) -> None:
    import ops.target

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(ops.target.Target, "from_stack", broken)
    with pytest.raises(RuntimeError, match="a bug"):
        main(["dlq", "list"])


def test_cli_subprocess_mistake_is_one_line_without_traceback() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ops", "local", "run", "--out-of-stock-rate", "0.6", "--decline-rate", "0.6"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    # ``ops local`` forwards to the workshop's entry point, which answers.
    assert result.stderr.startswith(WORKSHOP_PREFIX + "the order mix adds up to more than 1")
