"""The example courier saga (examples/courier_saga): synthesized from its own CDK app and run end to
end in the local emulator, proving the generic saga construct outside the order pipeline."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from aws_cdk import Aspects, Stack
from aws_cdk.assertions import Annotations, Match

from constructs_lib.checks import ResilienceChecks
from constructs_lib.function import DEFAULT_RUNTIME
from harness.run.run import local_aws
from local_cloud.clock import SimClock
from local_cloud.deploy import LocalDeployment
from local_cloud.iam_enforce import IamEnforcer, enforce_iam
from local_cloud.template import REGION, CloudAssembly

pytestmark = pytest.mark.e2e

EXAMPLE_DIR = Path(__file__).resolve().parents[2] / "examples" / "courier_saga"
FORWARD = ["ReserveSlot", "ChargeCustomer", "BookCourier", "NotifyCustomer"]


@pytest.fixture(scope="module")
def example_app(tmp_path_factory: pytest.TempPathFactory) -> tuple[Stack, CloudAssembly]:
    from examples.courier_saga.app import STACK_NAME, build_app

    outdir = tmp_path_factory.mktemp("courier.out")
    # Asset metadata (the CLI sets it) tells the emulator where each function's code was staged.
    app = build_app(context={"aws:cdk:enable-asset-metadata": True}, outdir=str(outdir))
    app.synth()
    stack = app.node.find_child(STACK_NAME)
    assert isinstance(stack, Stack)
    return stack, CloudAssembly(outdir, STACK_NAME)


@pytest.fixture(scope="module")
def example_assembly(example_app: tuple[Stack, CloudAssembly]) -> CloudAssembly:
    return example_app[1]


@dataclass
class Courier:
    deployment: LocalDeployment
    iam: IamEnforcer

    @property
    def machine(self) -> str:
        (arn,) = self.deployment.state_machines.values()
        return arn

    @property
    def table(self) -> str:
        (name,) = (name for logical_id, name in self.deployment.tables.items() if logical_id.startswith("Deliveries"))
        return name

    def run(self, name: str, execution_input: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """Start an execution, wait for it to end; its description and the states it entered, in order."""
        sfn = boto3.client("stepfunctions", region_name=REGION)
        arn = sfn.start_execution(stateMachineArn=self.machine, name=name, input=json.dumps(execution_input))[
            "executionArn"
        ]
        deadline = time.monotonic() + 60
        while (described := sfn.describe_execution(executionArn=arn))["status"] == "RUNNING":
            assert time.monotonic() < deadline, f"{name} still running"
            time.sleep(0.05)
        events = sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"]
        entered = [e["stateEnteredEventDetails"]["name"] for e in events if e["type"].endswith("StateEntered")]
        return described, entered

    def delivery(self, delivery_id: str) -> dict[str, Any] | None:
        item = boto3.client("dynamodb", region_name=REGION).get_item(
            TableName=self.table, Key={"delivery_id": {"S": delivery_id}}
        )
        if "Item" not in item:
            return None
        return {
            "steps": [s["S"] for s in item["Item"].get("steps", {}).get("L", [])],
            "outcome": item["Item"].get("outcome", {}).get("S"),
        }


@pytest.fixture(scope="module")
def courier(example_assembly: CloudAssembly) -> Iterator[Courier]:
    clock = SimClock()  # compensation retry waits pass in simulated time
    with local_aws(clock):
        deployment = LocalDeployment(example_assembly, clock).deploy()
        with deployment.lambda_routing(), enforce_iam(deployment) as iam:
            yield Courier(deployment, iam)


def test_example_saga_synthesizes_seven_functions_and_one_state_machine(example_assembly: CloudAssembly) -> None:
    assert len(list(example_assembly.resources("AWS::Lambda::Function"))) == 7
    (machine,) = example_assembly.resources("AWS::StepFunctions::StateMachine")
    assert machine.properties["StateMachineType"] == "STANDARD"
    assert (EXAMPLE_DIR / "handlers" / "steps.py").is_file()


def test_example_saga_synth_passes_resilience_checks_on_the_library_defaults(
    example_app: tuple[Stack, CloudAssembly],
) -> None:
    """The example a team copies is on the defaults: checks on, the middleware's layer, the runtime's Python."""
    stack, assembly = example_app
    assert any(isinstance(aspect, ResilienceChecks) for aspect in Aspects.of(stack).all)
    assert Annotations.from_stack(stack).find_error("*", Match.any_value()) == []
    functions = list(assembly.resources("AWS::Lambda::Function"))
    assert {f.properties["Runtime"] for f in functions} == {DEFAULT_RUNTIME.name}
    assert all(f.properties.get("Layers") for f in functions)  # the middleware's layer
    template = json.dumps(assembly.template)
    # Every function's errors alarm subtracts the business outcomes the middleware counts.
    assert template.count("FILL(expected, 0)") == len(functions)
    assert "PYTHON_3_12" not in (EXAMPLE_DIR / "stack.py").read_text()


def test_example_saga_happy_path_delivers(courier: Courier) -> None:
    described, entered = courier.run("happy", {"delivery_id": "d-happy"})
    assert described["status"] == "SUCCEEDED"
    assert entered == [*FORWARD, "RecordDelivered"]  # tasks only: five state transitions
    assert courier.delivery("d-happy") == {
        "steps": ["reserve", "charge", "book_courier", "notify"],
        "outcome": "DELIVERED",
    }


def test_example_saga_last_step_failure_compensates_in_reverse(courier: Courier) -> None:
    described, entered = courier.run(
        "notify-fails", {"delivery_id": "d-notify", "fail": {"notify": "NotificationFailed"}}
    )
    assert described["status"] == "SUCCEEDED"
    assert entered == [*FORWARD, "CancelCourier", "RefundCustomer", "ReleaseSlot", "RecordCancelled"]
    assert courier.delivery("d-notify") == {
        "steps": ["reserve", "charge", "book_courier", "notify!", "cancel_courier", "refund", "release"],
        "outcome": "CANCELLED",
    }


def test_example_saga_failed_step_is_compensated_itself_first(courier: Courier) -> None:
    """A courier booking that failed half-way is cancelled too (its own compensation runs first)."""
    described, entered = courier.run(
        "courier-fails", {"delivery_id": "d-courier", "fail": {"book_courier": "CourierUnavailable"}}
    )
    assert described["status"] == "SUCCEEDED"
    assert entered == [*FORWARD[:3], "CancelCourier", "RefundCustomer", "ReleaseSlot", "RecordCancelled"]
    assert courier.delivery("d-courier") == {
        "steps": ["reserve", "charge", "book_courier!", "cancel_courier", "refund", "release"],
        "outcome": "CANCELLED",
    }


def test_example_saga_declined_card_skips_the_refund(courier: Courier) -> None:
    described, entered = courier.run("declined", {"delivery_id": "d-declined", "fail": {"charge": "CardDeclined"}})
    assert described["status"] == "SUCCEEDED"
    assert entered == ["ReserveSlot", "ChargeCustomer", "ReleaseSlot", "RecordCancelled"]
    assert courier.delivery("d-declined") == {"steps": ["reserve", "charge!", "release"], "outcome": "CANCELLED"}


def test_example_saga_failing_compensation_runs_the_rest_then_parks(courier: Courier) -> None:
    described, entered = courier.run(
        "parked",
        {"delivery_id": "d-parked", "fail": {"notify": "NotificationFailed", "cancel_courier": "CompensationBroken"}},
    )
    assert described["status"] == "FAILED"
    assert described.get("error") == "CompensationFailed"
    assert entered == [
        *FORWARD,
        "CancelCourier",
        "RefundCustomerThenPark",
        "ReleaseSlotThenPark",
        "RecordNeedsAttention",
        "CompensationFailed",
    ]
    delivery = courier.delivery("d-parked")
    assert delivery is not None
    # one try + two retries (the example's compensation_retry), then the earlier compensations still run
    assert delivery["steps"] == [
        "reserve",
        "charge",
        "book_courier",
        "notify!",
        *["cancel_courier!"] * 3,
        "refund",
        "release",
    ]
    assert delivery["outcome"] == "NEEDS_ATTENTION"


def test_example_saga_input_without_delivery_is_refused_with_no_side_effect(courier: Courier) -> None:
    described, entered = courier.run("refused", {"delivery": "missing-id"})
    assert described["status"] == "FAILED"
    assert described.get("error") == "InputRefused"
    assert entered == ["ReserveSlot", "InputRefused"]


def test_example_saga_repeat_never_overwrites_the_recorded_outcome(courier: Courier) -> None:
    courier.run("first", {"delivery_id": "d-repeat"})
    # Attempt 2 (each step is idempotent per delivery, action and attempt: a repeat of attempt 1 would replay its
    # results), whose card is declined: its cancellation finds the outcome recorded.
    again = {"delivery_id": "d-repeat", "attempt": 2, "fail": {"charge": "CardDeclined"}}
    described, entered = courier.run("again-failing", again)
    assert described["status"] == "SUCCEEDED"
    assert entered[-2:] == ["RecordCancelled", "OutcomeAlreadyRecorded"]
    delivery = courier.delivery("d-repeat")
    assert delivery is not None and delivery["outcome"] == "DELIVERED"


def test_example_saga_every_call_allowed_by_its_role(courier: Courier) -> None:
    # Its own executions: the report must not depend on which of this module's tests ran before it in this
    # process (pytest-xdist may spread a module's tests over workers, each with its own fixture).
    assert courier.run("iam-delivered", {"delivery_id": "d-iam"})[0]["status"] == "SUCCEEDED"
    courier.run("iam-cancelled", {"delivery_id": "d-iam-cancel", "fail": {"notify": "NotificationFailed"}})
    report = courier.iam.report()
    denied = {d["action"] for entry in report.values() for d in entry["denied"]["first"]}
    # Only Lambda's own log delivery, recorded but not enforced: the functions' logs grant comes from
    # the AWS managed AWSLambdaBasicExecutionRole, whose document is not in the template.
    assert denied <= {"logs:CreateLogStream", "logs:PutLogEvents"}
    (machine,) = (entry for entry in report.values() if entry["kind"] == "state_machine")
    assert machine["denied"]["count"] == 0
    # the Lambda invocations and the outcome's UpdateItem were checked
    assert machine["calls"] > 0, f"displaced IAM hooks: {courier.iam.displaced_hooks()}"
    assert "dynamodb:UpdateItem" not in {g["action"] for g in machine["granted_unused"]}
