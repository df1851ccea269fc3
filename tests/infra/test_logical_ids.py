"""Logical IDs survive the constructs' layout: no stateful resource is replaced on the next deploy.

The IDs below are those of the templates synthesized before the stack was composed from
``stacks/order_constructs`` (``make synth`` at commit bd8cb08). A changed logical ID makes
CloudFormation replace the resource: a table or queue with its data, a log group with its logs, a
key with everything encrypted under it. The event source mapping is listed too: Lambda refuses a
second mapping of the same queue and function, so its replacement would fail the deploy.
"""

from __future__ import annotations

import pytest
from aws_cdk import App, Duration, Names, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template
from constructs import Construct

from constructs_lib.logical_ids import (
    StableLogicalIdStack,
    TransparentScope,
    keep_rule_permission_id,
    keep_sqs_event_source_id,
    make_unique_id,
)
from tests.infra.conftest import InlineFunctionFactory, SynthResult

_LOG_GROUPS = {
    "CancelShipmentLogs4FAA6757",
    "ChargePaymentLogsEF5D010F",
    "DlqReplayLogsBB2DCC37",
    "FinalizeOrderLogs82E5A2D0",
    "IntakeLogsB4E72C77",
    "OrderSagaExecutionLogsEBB65182",
    "RefundPaymentLogs1B356B37",
    "ReleaseInventoryLogsED58C24D",
    "ReserveInventoryLogs8015C537",
    "ShipOrderLogsFC8C5EE7",
    "ProviderWebhookLogsCA2D5D86",  # the providers' webhook (issue 40)
    "SweeperLogs964BB71D",
}
_COMMON = {
    "AlarmTopicD01E77F9": "AWS::SNS::Topic",
    "TicketTopic03CAAC13": "AWS::SNS::Topic",  # issue 41: tickets apart from pages
    "AlarmTopicKey57B0D3A7": "AWS::KMS::Key",
    "FailuresTableDE3298B0": "AWS::DynamoDB::Table",
    "IdempotencyTableE9369C9C": "AWS::DynamoDB::Table",
    "InventoryTable0EC4A984": "AWS::DynamoDB::Table",
    "OrdersTableD407578C": "AWS::DynamoDB::Table",
    "NeedsAttentionQueueC76D8D74": "AWS::SQS::Queue",
    "NeedsAttentionQueueDlq251D6C1F": "AWS::SQS::Queue",
    "OrdersQueue929135A0": "AWS::SQS::Queue",
    "OrdersQueueDlqB5CCEDC7": "AWS::SQS::Queue",
    "OrderSagaStateMachine15260A25": "AWS::StepFunctions::StateMachine",
    "ApiAccessLogsE9DF007D": "AWS::Logs::LogGroup",  # the order API's access logs (issue 22)
    "ApiExecutionLogs66FBF5B8": "AWS::Logs::LogGroup",  # the order API's execution logs (issue 29)
    **dict.fromkeys(_LOG_GROUPS, "AWS::Logs::LogGroup"),
}
#: Today's stateful logical IDs, per stage.
STATEFUL = {
    "dev": {
        **_COMMON,
        "SandboxLedgerTableDCAA2315": "AWS::DynamoDB::Table",
        "SandboxCarrierLogsE84072B2": "AWS::Logs::LogGroup",
        "SandboxPaymentLogs21908F6C": "AWS::Logs::LogGroup",
        # dev's placeholder webhook signing secret (prod imports the operator's: webhook_secret_arn)
        "WebhookSigningSecretDD964680": "AWS::SecretsManager::Secret",
        "IntakeFunctionSqsEventSourceOrderPipelinedevOrdersQueue6929C7F9DC0FDD85": "AWS::Lambda::EventSourceMapping",
    },
    "prod": {
        **_COMMON,
        "DataKey2A0DE9E6": "AWS::KMS::Key",
        "IntakeFunctionSqsEventSourceOrderPipelineprodOrdersQueue7505D863886727EC": "AWS::Lambda::EventSourceMapping",
    },
}
#: The Lambda permissions the EventBridge targets add (path-derived IDs, kept too).
PERMISSIONS = {
    "dev": (
        "ReplayOnDlqAlarmAllowEventRuleOrderPipelinedevDlqReplayFunctionE5A913706A4F32A2",
        "ReplayScheduleAllowEventRuleOrderPipelinedevDlqReplayFunctionE5A91370365A52CC",
        "SweepScheduleAllowEventRuleOrderPipelinedevSweeperFunction32A70E10E98A775B",
    ),
    "prod": (
        "ReplayOnDlqAlarmAllowEventRuleOrderPipelineprodDlqReplayFunction8CC259091D84D278",
        "ReplayScheduleAllowEventRuleOrderPipelineprodDlqReplayFunction8CC2590979E14F2A",
        "SweepScheduleAllowEventRuleOrderPipelineprodSweeperFunction343E37D3CA4197CA",
    ),
}


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_logical_ids_of_stateful_resources_unchanged(stage: str, request: pytest.FixtureRequest) -> None:
    synth: SynthResult = request.getfixturevalue(stage)
    resources = synth.resources
    missing = {lid: kind for lid, kind in STATEFUL[stage].items() if resources.get(lid, {}).get("Type") != kind}
    assert missing == {}, f"{stage}: these would be replaced on deploy: {missing}"


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_logical_ids_no_other_stateful_resource(stage: str, request: pytest.FixtureRequest) -> None:
    """A new stateful resource is a decision: it is added to :data:`STATEFUL` with it."""
    synth: SynthResult = request.getfixturevalue(stage)
    kinds = set(STATEFUL[stage].values())
    stateful = {lid for lid, r in synth.resources.items() if r["Type"] in kinds}
    assert stateful == set(STATEFUL[stage])


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_logical_ids_of_rule_permissions_unchanged(stage: str, request: pytest.FixtureRequest) -> None:
    synth: SynthResult = request.getfixturevalue(stage)
    permissions = synth.of_type("AWS::Lambda::Permission")
    assert set(PERMISSIONS[stage]) <= set(permissions)


@pytest.mark.parametrize(
    "path",
    [["Queue"], ["Orders", "Queue"], ["Orders", "Resource"], ["A", "Default", "B"], ["Intake", "Function", "X:y-z"]],
)
def test_logical_ids_make_unique_id_matches_cdk(path: list[str]) -> None:
    """The allocation is CDK's own: the same path gives CDK's ID."""
    stack = Stack(App(), "S")
    scope: Construct = stack
    for component in path[:-1]:
        scope = Construct(scope, component)
    queue = sqs.Queue(scope, path[-1])
    assert make_unique_id([*path, "Resource"]) == stack.get_logical_id(queue.node.default_child)  # type: ignore[arg-type]


def test_logical_ids_transparent_scope_is_left_out() -> None:
    app = App()
    plain = Stack(app, "Plain")
    sqs.Queue(plain, "Jobs")
    grouped = StableLogicalIdStack(app, "Grouped")
    sqs.Queue(TransparentScope(TransparentScope(grouped, "Outer"), "Inner"), "Jobs")
    assert set(Template.from_stack(grouped).to_json()["Resources"]) == set(
        Template.from_stack(plain).to_json()["Resources"]
    )


def test_logical_ids_path_derived_ids_kept(inline_function: InlineFunctionFactory) -> None:
    """The event source mapping and the rule permission are named after another construct's path."""
    ids = {}
    for grouped in (False, True):
        stack = StableLogicalIdStack(App(), "S") if grouped else Stack(App(), "S")
        scope: Construct = TransparentScope(stack, "Group") if grouped else stack
        fn = inline_function(scope, "Worker", 30)
        queue = sqs.Queue(scope, "Jobs")
        fn.add_event_source(sources.SqsEventSource(queue))
        rule = events.Rule(scope, "Every", schedule=events.Schedule.rate(Duration.minutes(5)))
        rule.add_target(targets.LambdaFunction(fn))
        if grouped:
            assert "Group" in Names.node_unique_id(queue.node)  # what CDK names the mapping after
            keep_sqs_event_source_id(fn, queue)
            keep_rule_permission_id(rule, fn)
        ids[grouped] = set(Template.from_stack(stack).to_json()["Resources"])
    assert ids[True] == ids[False]


def _grouped_queues(stack: Stack, count: int) -> None:
    scope: Construct = stack
    if isinstance(stack, StableLogicalIdStack):
        scope = TransparentScope(TransparentScope(stack, "Outer"), "Inner")
    for n in range(count):
        sqs.Queue(Construct(scope, f"Part{n}"), "Jobs", dead_letter_queue=None)


def _jsii_round_trips(stack: Stack) -> int:
    from jsii._kernel.providers import process

    calls = 0
    send = process._NodeProcess.send

    def counting(self: object, *args: object, **kwargs: object) -> object:
        nonlocal calls
        calls += 1
        return send(self, *args, **kwargs)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(process._NodeProcess, "send", counting)
        Template.from_stack(stack)
    return calls


def test_logical_ids_allocation_reads_each_element_once() -> None:
    """CDK calls the allocation back at each resolution of an element's ID (about six per element), and each
    jsii round trip to node costs about 0.3 ms (2,600 elements in the order stack): one answer per callback,
    and the element's path read once (two round trips). Reading each scope's id took 55 per element."""
    plain, grouped = Stack(App(), "S"), StableLogicalIdStack(App(), "S")
    for stack in (plain, grouped):
        _grouped_queues(stack, 20)
    extra = _jsii_round_trips(grouped) - _jsii_round_trips(plain)
    assert extra <= 9 * 20, f"{extra} jsii round trips for 20 elements"


def test_logical_ids_without_transparent_scopes_are_cdks() -> None:
    """Computed here for every element, the IDs are CDK's own wherever no transparent scope is involved."""
    ids = []
    for stack in (Stack(App(), "S"), StableLogicalIdStack(App(), "S")):
        scope = Construct(Construct(stack, "Order-Flow"), "Default")
        sqs.Queue(scope, "Jobs")
        sqs.Queue(Construct(scope, "Resource"), "Resource")
        events.Rule(stack, "x" * 300, schedule=events.Schedule.rate(Duration.minutes(5)))
        ids.append(set(Template.from_stack(stack).to_json()["Resources"]))
    assert ids[0] == ids[1]
