"""The app synthesized with ResilienceChecks on its defaults, then run locally with the generic command
(``python -m local_cloud run``): a declined card pages nobody, a throttled step is retried by the saga."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import Stack
from aws_cdk.assertions import Annotations, Match, Template

from cdk_app import STACK_NAME, build_app
from local_cloud.cli import main

OK_CARD, DECLINED_CARD = "4242-4242-4242-4242", "4000-0000-0000-0002"


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    outdir = tmp_path_factory.mktemp("travel") / "cdk.out"
    # Asset metadata (the CDK CLI sets it) tells the emulator where each function's code was staged.
    app = build_app(context={"aws:cdk:enable-asset-metadata": True}, outdir=str(outdir))
    app.synth()
    stack = app.node.find_child(STACK_NAME)
    assert isinstance(stack, Stack)
    assert Annotations.from_stack(stack).find_error("*", Match.any_value()) == []  # ResilienceChecks passes
    return outdir


def test_travel_app_synth_alarms_every_function_on_unexpected_errors_only(assembly: Path) -> None:
    template = Template.from_json(json.loads((assembly / f"{STACK_NAME}.template.json").read_text()))
    template.resource_count_is("AWS::Lambda::Function", 7)  # six steps and the intake
    alarms = template.find_resources("AWS::CloudWatch::Alarm")
    expected = [a for a in alarms.values() if "ExpectedErrors" in json.dumps(a["Properties"].get("Metrics", []))]
    assert len(expected) == 7  # Errors - ExpectedErrors, one per function
    staged = {f"{p.parent.name}/{p.name}" for p in assembly.rglob("lambda_resilience/*.py")}
    assert "lambda_resilience/step.py" in staged  # the middleware's layer ...
    assert "lambda_resilience/testing.py" not in staged  # ... without its test helpers


def _run(assembly: Path, capsys: pytest.CaptureFixture[str], *args: str, pages: bool = False) -> tuple[int, Any]:
    expect = [] if pages else ["--expect-no-pages"]
    status = main(["run", "--assembly", str(assembly), "--stack", STACK_NAME, *expect, *args])
    return status, json.loads(capsys.readouterr().out)


# --8<-- [start:local-run]
def test_travel_app_local_run_declined_card_pages_nobody_throttle_retried(
    assembly: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ok = json.dumps({"booking_id": "b-ok", "card": OK_CARD})
    declined = json.dumps({"booking_id": "b-declined", "card": DECLINED_CARD})
    # More throttled calls than the SDK's own attempts of one invocation: a ReserveHotel fails, the saga retries it.
    starts = ["--start", f"BookingSaga={ok}", "--start", f"BookingSaga={declined}"]
    status, report = _run(assembly, capsys, *starts, "--throttle", "Bookings=11")
    assert status == 0 and report["pages"] == [] and report["alarms_in_alarm"] == [], report
    first, second = report["executions"]
    assert first["status"] == second["status"] == "SUCCEEDED"
    assert first["states"] == ["ReserveHotel", "BookFlight", "ChargeCard"]
    assert second["states"] == ["ReserveHotel", "BookFlight", "ChargeCard", "CancelFlight", "CancelHotel"]
    *throttled, declined = second["task_failures"]
    assert declined == "CardDeclined"  # no refund: nothing charged
    # Throttled and retried by the saga: which execution, and how often, depends on how their calls interleave.
    retried = first["task_failures"] + throttled
    assert retried and set(retried) == {"TransientStepError"}
    # AWS counts every failed invocation in Errors; ExpectedErrors takes these off the alarm.
    failures = len(first["task_failures"]) + len(second["task_failures"])
    assert sum(report["function_errors"].values()) == failures


# --8<-- [end:local-run]


def test_travel_app_local_run_sqs_requests_start_one_execution_per_booking(
    assembly: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through the intake's queue (``BookingRequests``: the ResilientQueue's construct ID names its queue): a
    request delivered twice starts one execution; the declined card pages nobody; the throttled steps are retried."""
    ok = json.dumps({"booking_id": "b-1", "card": OK_CARD})
    declined = json.dumps({"booking_id": "b-2", "card": DECLINED_CARD})
    sends = [arg for body in (ok, declined, ok) for arg in ("--send", f"BookingRequests={body}")]
    status, report = _run(assembly, capsys, *sends, "--throttle", "Bookings=11")
    assert status == 0 and report["pages"] == [] and report["alarms_in_alarm"] == [], report
    by_name = {e["name"]: e for e in report["executions"]}
    assert sorted(by_name) == ["booking-b-1", "booking-b-2"]  # the duplicate started nothing
    assert by_name["booking-b-1"]["status"] == by_name["booking-b-2"]["status"] == "SUCCEEDED"
    assert by_name["booking-b-2"]["task_failures"][-1] == "CardDeclined"
    assert "TransientStepError" in by_name["booking-b-1"]["task_failures"] + by_name["booking-b-2"]["task_failures"]
    assert all(depth == 0 for depth in report["queues"].values())


def test_travel_app_local_run_malformed_request_is_dead_lettered_at_once(
    assembly: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, report = _run(assembly, capsys, "--send", "BookingRequests=not json", pages=True)
    assert status == 0 and report["executions"] == []
    assert {k: v for k, v in report["invocations"].items() if "Intake" in k} != {}
    assert sum(v for k, v in report["invocations"].items() if "Intake" in k) == 1  # its first receive, no retry
    dlq = {k: v for k, v in report["queues"].items() if "Dlq" in k}
    assert list(dlq.values()) == [1]
    assert [p["alarm"] for p in report["pages"]] and all("Dlq" in p["alarm"] for p in report["pages"])
