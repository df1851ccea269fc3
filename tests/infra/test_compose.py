"""Constructs that compose: existing resources, pass-through props, rejected combinations.

Each construct is synthesized alone in a small stack (``Template.from_stack``); the pipeline's own
template is covered by the other modules.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, CfnElement, Duration, RemovalPolicy, Size, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Annotations, Match, Template
from constructs import IConstruct

from constructs_lib.alarms import FunctionAlarms, FunctionAlarmsProps
from constructs_lib.function import DEFAULT_RUNTIME, PipelineFunction, PipelineFunctionProps
from constructs_lib.queue import ResilientQueue, ResilientQueueProps
from constructs_lib.tables import DataTable, DataTableProps, IdempotencyTable
from tests.infra.conftest import InlineFunctionFactory

ACCOUNT_ARN = "arn:aws:{service}:us-east-1:123456789012:{name}"
QUEUE_ARN = ACCOUNT_ARN.format(service="sqs", name="existing-queue")
DLQ_ARN = ACCOUNT_ARN.format(service="sqs", name="existing-dlq")
TABLE_ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/existing-table"
FUNCTION_ARN = "arn:aws:lambda:us-east-1:123456789012:function:existing-fn"
TOPIC_ARN = ACCOUNT_ARN.format(service="sns", name="existing-topic")
ROLE_ARN = "arn:aws:iam::123456789012:role/existing-role"
#: Every module of constructs_lib (the order constructs live in stacks/order_constructs).
CONSTRUCTS_LIB = Path(__file__).resolve().parents[2] / "packages/constructs_lib/src/constructs_lib"
GENERIC_MODULES = tuple(
    sorted(str(p.relative_to(CONSTRUCTS_LIB).with_suffix("")) for p in CONSTRUCTS_LIB.rglob("*.py"))
)
#: Modules whose subject is the saga pattern itself (the word is generic there): the construct and its parts.
SAGA_PATTERN_MODULES = ("__init__", "generic_saga", *(m for m in GENERIC_MODULES if m.startswith("saga/")))


@pytest.fixture
def stack() -> Stack:
    return Stack(App(), "ComposeUnderTest")


@pytest.fixture
def topic(stack: Stack) -> sns.ITopic:
    """An existing topic: constructs notify any ``ITopic``, not only one they create."""
    return sns.Topic.from_topic_arn(stack, "ExistingTopic", TOPIC_ARN)


def _logical_id(stack: Stack, construct: IConstruct) -> str:
    """Logical ID of an L2's CloudFormation resource."""
    child = construct.node.default_child
    assert isinstance(child, CfnElement), construct.node.path
    return stack.get_logical_id(child)


def _queue_dimension(value: Any) -> list[dict[str, Any]]:
    return [{"Name": "QueueName", "Value": value}]


# --- ResilientQueue: existing queues ----------------------------------------------------------------


def test_resilient_queue_existing_queue_and_dlq_creates_no_queue(
    stack: Stack, topic: sns.ITopic, inline_function: InlineFunctionFactory
) -> None:
    existing = sqs.Queue.from_queue_arn(stack, "Existing", QUEUE_ARN)
    existing_dlq = sqs.Queue.from_queue_arn(stack, "ExistingDlq", DLQ_ARN)
    consumer = inline_function(stack, "Consumer", 30)
    construct = ResilientQueue(
        stack,
        "Jobs",
        props=ResilientQueueProps(
            alarm_topic=topic,
            existing_queue=existing,
            existing_dead_letter_queue=existing_dlq,
            consumer=consumer,
            consumer_timeout=Duration.seconds(30),
        ),
    )
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::SQS::Queue", 0)
    assert (construct.queue, construct.dlq, construct.max_receive_count) == (existing, existing_dlq, None)
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {"Dimensions": _queue_dimension("existing-dlq"), "AlarmActions": [TOPIC_ARN], "OKActions": Match.absent()},
    )
    template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {"EventSourceArn": QUEUE_ARN, "FunctionResponseTypes": ["ReportBatchItemFailures"]},
    )


def test_resilient_queue_existing_dlq_is_redrive_target(stack: Stack, topic: sns.ITopic) -> None:
    shared_dlq = sqs.Queue.from_queue_arn(stack, "SharedDlq", DLQ_ARN)
    construct = ResilientQueue(
        stack,
        "Jobs",
        props=ResilientQueueProps(alarm_topic=topic, existing_dead_letter_queue=shared_dlq, max_receive_count=5),
    )
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::SQS::Queue", 1)
    template.has_resource_properties(
        "AWS::SQS::Queue", {"RedrivePolicy": {"deadLetterTargetArn": DLQ_ARN, "maxReceiveCount": 5}}
    )
    template.has_resource_properties("AWS::CloudWatch::Alarm", {"Dimensions": _queue_dimension("existing-dlq")})
    assert construct.dlq is shared_dlq
    assert construct.max_receive_count == 5


def test_resilient_queue_existing_consumer_function(stack: Stack, topic: sns.ITopic) -> None:
    """Any ``IFunction`` consumes: the mapping names it, visibility is 6x the timeout given for it."""
    consumer = lambda_.Function.from_function_attributes(
        stack, "ExistingFn", function_arn=FUNCTION_ARN, same_environment=True
    )
    construct = ResilientQueue(
        stack,
        "Jobs",
        props=ResilientQueueProps(alarm_topic=topic, consumer=consumer, consumer_timeout=Duration.seconds(20)),
    )
    template = Template.from_stack(stack)
    queue_id = _logical_id(stack, construct.queue)
    template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "FunctionName": "existing-fn",
            "EventSourceArn": {"Fn::GetAtt": [queue_id, "Arn"]},
            "FunctionResponseTypes": ["ReportBatchItemFailures"],
        },
    )
    assert template.to_json()["Resources"][queue_id]["Properties"]["VisibilityTimeout"] == 120


# --- ResilientQueue: pass-through props --------------------------------------------------------------


@pytest.mark.parametrize("form", ["struct", "mapping"])
def test_resilient_queue_queue_props_merged_over_defaults(stack: Stack, topic: sns.ITopic, form: str) -> None:
    values: dict[str, Any] = {"delivery_delay": Duration.seconds(5), "receive_message_wait_time": Duration.seconds(20)}
    queue_props: object = sqs.QueueProps(**values) if form == "struct" else values
    construct = ResilientQueue(stack, "Jobs", props=ResilientQueueProps(alarm_topic=topic, queue_props=queue_props))
    source = Template.from_stack(stack).to_json()["Resources"][_logical_id(stack, construct.queue)]
    props = source["Properties"]
    assert (props["DelaySeconds"], props["ReceiveMessageWaitTimeSeconds"]) == (5, 20)
    # the defaults the overrides did not touch are still there
    assert props["SqsManagedSseEnabled"] is True
    assert props["VisibilityTimeout"] == 30
    assert props["MessageRetentionPeriod"] == 4 * 24 * 3600
    assert props["RedrivePolicy"]["maxReceiveCount"] == 3


def test_resilient_queue_dead_letter_queue_props_merged_over_defaults(stack: Stack, topic: sns.ITopic) -> None:
    construct = ResilientQueue(
        stack,
        "Jobs",
        props=ResilientQueueProps(
            alarm_topic=topic,
            queue_props={"fifo": True},
            dead_letter_queue_props=sqs.QueueProps(fifo=True, removal_policy=RemovalPolicy.RETAIN),
        ),
    )
    resources = Template.from_stack(stack).to_json()["Resources"]
    dlq = resources[_logical_id(stack, construct.dlq)]
    assert dlq["Properties"]["FifoQueue"] is True
    assert dlq["Properties"]["MessageRetentionPeriod"] == 14 * 24 * 3600
    assert dlq["DeletionPolicy"] == "Retain"
    assert resources[_logical_id(stack, construct.queue)]["DeletionPolicy"] == "Delete"


def test_resilient_queue_alarm_descriptions_default_neutral_and_overridable(stack: Stack, topic: sns.ITopic) -> None:
    neutral = ResilientQueue(stack, "Jobs", props=ResilientQueueProps(alarm_topic=topic, alarm_on_queue_depth=True))
    worded = ResilientQueue(
        stack,
        "Orders",
        props=ResilientQueueProps(
            alarm_topic=topic,
            alarm_on_queue_depth=True,
            dlq_alarm_description="each is an order needing attention",
            queue_alarm_description="orders waiting",
        ),
    )
    resources = Template.from_stack(stack).to_json()["Resources"]

    def description(alarm: Any) -> str:
        return str(resources[_logical_id(stack, alarm)]["Properties"]["AlarmDescription"])

    assert neutral.queue_alarm is not None and worded.queue_alarm is not None
    assert description(neutral.dlq_alarm) == (
        "Jobs: messages in the dead-letter queue (each failed processing; triage, then replay)"
    )
    assert description(neutral.queue_alarm) == "Jobs: messages waiting in the queue"
    assert description(worded.dlq_alarm) == "each is an order needing attention"
    assert description(worded.queue_alarm) == "orders waiting"


# --- ResilientQueue: rejected combinations ------------------------------------------------------------


def _existing(stack: Stack) -> dict[str, Any]:
    return {
        "existing_queue": sqs.Queue.from_queue_arn(stack, "Existing", QUEUE_ARN),
        "existing_dead_letter_queue": sqs.Queue.from_queue_arn(stack, "ExistingDlq", DLQ_ARN),
    }


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("existing-queue-and-queue-props", "existing_queue and queue_props are mutually exclusive"),
        ("existing-queue-without-dlq", "existing_queue needs existing_dead_letter_queue"),
        ("existing-queue-and-visibility", "existing_queue and visibility_timeout are mutually exclusive"),
        ("existing-queue-and-max-receive", "existing_queue and max_receive_count are mutually exclusive"),
        ("existing-dlq-and-dlq-props", "existing_dead_letter_queue and dead_letter_queue_props"),
        ("visibility-below-6x-in-queue-props", r"visibility_timeout 60 s is below 6x the consumer timeout \(180 s\)"),
        ("visibility-given-twice", "visibility_timeout given twice"),
        ("queue-props-typo", "queue_props: Queue takes no visiblity_timeout"),
        ("queue-props-own-dlq", "queue_props: dead_letter_queue is set by the construct"),
        ("queue-props-unencrypted", "queue_props: encryption=UNENCRYPTED"),
        ("dlq-props-no-tls", "dead_letter_queue_props: enforce_ssl=False"),
        ("fifo-without-fifo-dlq", "a FIFO queue needs a FIFO DLQ"),
    ],
)
def test_resilient_queue_rejects_combination(
    stack: Stack, topic: sns.ITopic, inline_function: InlineFunctionFactory, case: str, message: str
) -> None:
    consumer = {"consumer": inline_function(stack, "Consumer", 30), "consumer_timeout": Duration.seconds(30)}
    cases: dict[str, Callable[[], dict[str, Any]]] = {
        "existing-queue-and-queue-props": lambda: {
            **_existing(stack),
            "queue_props": {"delivery_delay": Duration.seconds(1)},
        },
        "existing-queue-without-dlq": lambda: {"existing_queue": _existing(stack)["existing_queue"]},
        "existing-queue-and-visibility": lambda: {**_existing(stack), "visibility_timeout": Duration.minutes(5)},
        "existing-queue-and-max-receive": lambda: {**_existing(stack), "max_receive_count": 5},
        "existing-dlq-and-dlq-props": lambda: {
            "existing_dead_letter_queue": _existing(stack)["existing_dead_letter_queue"],
            "dead_letter_queue_props": {"fifo": True},
        },
        "visibility-below-6x-in-queue-props": lambda: {
            **consumer,
            "queue_props": sqs.QueueProps(visibility_timeout=Duration.seconds(60)),
        },
        "visibility-given-twice": lambda: {
            "visibility_timeout": Duration.minutes(5),
            "queue_props": {"visibility_timeout": Duration.minutes(6)},
        },
        "queue-props-typo": lambda: {"queue_props": {"visiblity_timeout": Duration.minutes(5)}},
        "queue-props-own-dlq": lambda: {
            "queue_props": {"dead_letter_queue": sqs.DeadLetterQueue(queue=sqs.Queue(stack, "D"), max_receive_count=1)}
        },
        "queue-props-unencrypted": lambda: {"queue_props": {"encryption": sqs.QueueEncryption.UNENCRYPTED}},
        "dlq-props-no-tls": lambda: {"dead_letter_queue_props": {"enforce_ssl": False}},
        "fifo-without-fifo-dlq": lambda: {"queue_props": {"fifo": True}},
    }
    kwargs = cases[case]()
    with pytest.raises(ValueError, match=message):
        ResilientQueueProps(alarm_topic=topic, **kwargs)


def test_resilient_queue_visibility_at_six_times_in_queue_props_accepted(
    stack: Stack, topic: sns.ITopic, inline_function: InlineFunctionFactory
) -> None:
    props = ResilientQueueProps(
        alarm_topic=topic,
        consumer=inline_function(stack, "Consumer", 30),
        consumer_timeout=Duration.seconds(30),
        queue_props={"visibility_timeout": Duration.seconds(180)},
    )
    ResilientQueue(stack, "Jobs", props=props)
    Template.from_stack(stack).has_resource_properties("AWS::SQS::Queue", {"VisibilityTimeout": 180})


# --- tables ---------------------------------------------------------------------------------------------


def test_data_table_existing_table_creates_nothing(stack: Stack) -> None:
    existing = dynamodb.Table.from_table_arn(stack, "Existing", TABLE_ARN)
    construct = DataTable(stack, "Data", props=DataTableProps(existing_table=existing))
    Template.from_stack(stack).resource_count_is("AWS::DynamoDB::Table", 0)
    assert construct.table is existing


def test_idempotency_table_existing_table_creates_nothing(stack: Stack) -> None:
    existing = dynamodb.Table.from_table_name(stack, "Existing", "idempotency")
    assert IdempotencyTable(stack, "Idem", existing_table=existing).table is existing
    Template.from_stack(stack).resource_count_is("AWS::DynamoDB::Table", 0)


@pytest.mark.parametrize("form", ["struct", "mapping"])
def test_data_table_table_props_merged_over_defaults(stack: Stack, form: str) -> None:
    key = dynamodb.Attribute(name="tenant", type=dynamodb.AttributeType.STRING)
    values: dict[str, Any] = {"table_class": dynamodb.TableClass.STANDARD_INFREQUENT_ACCESS}
    # TableProps requires a partition key: given there, the typed partition_key is left unset
    table_props: object = dynamodb.TableProps(partition_key=key, **values) if form == "struct" else values
    partition = None if form == "struct" else "tenant"
    DataTable(stack, "Data", props=DataTableProps(partition_key=partition, table_props=table_props))
    Template.from_stack(stack).has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "TableClass": "STANDARD_INFREQUENT_ACCESS",
            "KeySchema": [{"AttributeName": "tenant", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST",
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
        },
    )


def test_data_table_global_secondary_indexes_from_props(stack: Stack) -> None:
    index = dynamodb.GlobalSecondaryIndexProps(
        index_name="by-state",
        partition_key=dynamodb.Attribute(name="state", type=dynamodb.AttributeType.STRING),
        projection_type=dynamodb.ProjectionType.KEYS_ONLY,
    )
    DataTable(stack, "Data", props=DataTableProps(global_secondary_indexes=(index,)))
    Template.from_stack(stack).has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": "by-state",
                    "KeySchema": [{"AttributeName": "state", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "KEYS_ONLY"},
                }
            ]
        },
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"partition_key": "pk"}, "existing_table and partition_key are mutually exclusive"),
        ({"table_props": {"table_class": dynamodb.TableClass.STANDARD}}, "existing_table and table_props"),
        ({"removal_policy": RemovalPolicy.RETAIN}, "existing_table and removal_policy"),
        (
            {
                "global_secondary_indexes": (
                    dynamodb.GlobalSecondaryIndexProps(
                        index_name="i", partition_key=dynamodb.Attribute(name="a", type=dynamodb.AttributeType.STRING)
                    ),
                )
            },
            "existing_table and global_secondary_indexes",
        ),
    ],
    ids=["partition-key", "table-props", "removal-policy", "indexes"],
)
def test_data_table_existing_table_rejects_shaping_props(stack: Stack, kwargs: dict[str, Any], message: str) -> None:
    existing = dynamodb.Table.from_table_arn(stack, "Existing", TABLE_ARN)
    with pytest.raises(ValueError, match=message):
        DataTableProps(existing_table=existing, **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ttl_attribute": "exp", "table_props": {"time_to_live_attribute": "ttl"}}, "time_to_live_attribute given"),
        ({"table_props": {"point_in_time_recovery": False}}, "point-in-time recovery stays enabled"),
        ({"table_props": {"partiton_key": "x"}}, "table_props: Table takes no partiton_key"),
    ],
    ids=["ttl-twice", "pitr-off", "typo"],
)
def test_data_table_rejects_bad_props(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DataTableProps(**kwargs)


# --- function -------------------------------------------------------------------------------------------


@pytest.fixture
def code_dir(tmp_path: Path) -> Path:
    (tmp_path / "handler.py").write_text("def handler(event, context):\n    return {}\n")
    return tmp_path


def _function(stack: Stack, code_dir: Path, **kwargs: Any) -> PipelineFunction:
    return PipelineFunction(stack, "Fn", props=PipelineFunctionProps(code_dir=code_dir, service_name="svc", **kwargs))


def test_pipeline_function_arm64_by_default_x86_on_request(stack: Stack, code_dir: Path) -> None:
    arm = _function(stack, code_dir)
    x86 = PipelineFunction(
        stack,
        "X86",
        props=PipelineFunctionProps(code_dir=code_dir, service_name="svc", architecture=lambda_.Architecture.X86_64),
    )
    resources = Template.from_stack(stack).to_json()["Resources"]
    assert resources[_logical_id(stack, arm.function)]["Properties"]["Architectures"] == ["arm64"]
    assert resources[_logical_id(stack, x86.function)]["Properties"]["Architectures"] == ["x86_64"]


@pytest.mark.parametrize("form", ["struct", "mapping"])
def test_pipeline_function_function_props_merged_over_defaults(stack: Stack, code_dir: Path, form: str) -> None:
    values: dict[str, Any] = {"description": "resizes images", "ephemeral_storage_size": Size.mebibytes(1024)}
    function_props: object = lambda_.FunctionOptions(**values) if form == "struct" else values
    _function(stack, code_dir, function_props=function_props)
    Template.from_stack(stack).has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Description": "resizes images",
            "EphemeralStorage": {"Size": 1024},
            # defaults the overrides did not touch
            "Architectures": ["arm64"],
            "TracingConfig": {"Mode": "Active"},
            "LoggingConfig": Match.object_like({"LogFormat": "JSON"}),
            "Runtime": DEFAULT_RUNTIME.name,
        },
    )


def test_pipeline_function_existing_role_and_log_group(stack: Stack, code_dir: Path) -> None:
    role = iam.Role.from_role_arn(stack, "ExistingRole", ROLE_ARN, mutable=False)
    group = logs.LogGroup.from_log_group_name(stack, "ExistingLogs", "/shared/functions")
    construct = _function(stack, code_dir, existing_role=role, existing_log_group=group)
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::IAM::Role", 0)
    template.resource_count_is("AWS::Logs::LogGroup", 0)
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {"Role": ROLE_ARN, "LoggingConfig": Match.object_like({"LogGroup": "/shared/functions"})},
    )
    assert (construct.role, construct.log_group) == (role, group)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"function_props": {"timeout": Duration.seconds(5)}}, "function_props: timeout is set by the construct"),
        ({"function_props": {"architecture": lambda_.Architecture.X86_64}}, "architecture is set by the construct"),
        ({"function_props": {"memroy_size": 256}}, "function_props: Function takes no memroy_size"),
        ({"log_retention": logs.RetentionDays.ONE_DAY}, "existing_log_group and log_retention are mutually exclusive"),
        ({"removal_policy": RemovalPolicy.RETAIN}, "existing_log_group and removal_policy"),
    ],
    ids=["owned-timeout", "owned-architecture", "typo", "log-retention", "removal-policy"],
)
def test_pipeline_function_rejects_combination(
    stack: Stack, code_dir: Path, kwargs: dict[str, Any], message: str
) -> None:
    if "function_props" not in kwargs:
        kwargs["existing_log_group"] = logs.LogGroup.from_log_group_name(stack, "Existing", "/x")
    with pytest.raises(ValueError, match=message):
        PipelineFunctionProps(code_dir=code_dir, service_name="svc", **kwargs)


def test_function_alarms_on_existing_function(stack: Stack, topic: sns.ITopic) -> None:
    existing = lambda_.Function.from_function_arn(stack, "Existing", FUNCTION_ARN)
    alarms = FunctionAlarms(
        stack,
        "ExistingFnAlarms",
        props=FunctionAlarmsProps(function=existing, alarm_topic=topic, alarm_on_throttles=True),
    )
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::CloudWatch::Alarm", 2)
    for metric, alarm in (("Errors", alarms.errors_alarm), ("Throttles", alarms.throttles_alarm)):
        assert alarm is not None
        template.has_resource_properties(
            "AWS::CloudWatch::Alarm",
            {
                "MetricName": metric,
                "Namespace": "AWS/Lambda",
                "Dimensions": [{"Name": "FunctionName", "Value": "existing-fn"}],
                "Statistic": "Sum",
                "Period": 60,
                "Threshold": 0,
                "EvaluationPeriods": 1,
                "TreatMissingData": "notBreaching",
                "AlarmActions": [TOPIC_ARN],
                "OKActions": Match.absent(),  # a deploy sends no OK notification
            },
        )


def test_function_alarms_rejects_throttles_description_without_throttles(stack: Stack, topic: sns.ITopic) -> None:
    existing = lambda_.Function.from_function_arn(stack, "Existing", FUNCTION_ARN)
    with pytest.raises(ValueError, match="throttles_description needs alarm_on_throttles"):
        FunctionAlarmsProps(function=existing, alarm_topic=topic, throttles_description="x")


# --- no app vocabulary ------------------------------------------------------------------------------------


@pytest.mark.parametrize("module", GENERIC_MODULES)
def test_generic_construct_module_holds_no_app_vocabulary(module: str) -> None:
    """Alarm texts, metric names and titles in generic constructs come from props: no app words."""
    source = (CONSTRUCTS_LIB / f"{module}.py").read_text()
    words = "orders?|sweeper|sandbox|payment|inventory" + ("" if module in SAGA_PATTERN_MODULES else "|saga")
    found = re.findall(rf"\b({words})\b", source, flags=re.IGNORECASE)
    assert found == [], f"packages/constructs_lib/src/constructs_lib/{module}.py: {sorted(set(found))}"


@pytest.mark.parametrize("existing", ["dlq", "queue-and-dlq"])
def test_resilient_queue_composed_with_existing_queues_passes_resilience_checks(
    checked_stack: Stack, inline_function: InlineFunctionFactory, existing: str
) -> None:
    consumer = inline_function(checked_stack, "Consumer", 30)
    topic = sns.Topic.from_topic_arn(checked_stack, "Topic", TOPIC_ARN)
    FunctionAlarms(checked_stack, "ConsumerAlarms", props=FunctionAlarmsProps(function=consumer, alarm_topic=topic))
    queues = _existing(checked_stack)
    if existing == "dlq":
        del queues["existing_queue"]
    ResilientQueue(
        checked_stack,
        "Jobs",
        props=ResilientQueueProps(
            alarm_topic=topic, consumer=consumer, consumer_timeout=Duration.seconds(30), **queues
        ),
    )
    assert Annotations.from_stack(checked_stack).find_error("*", Match.any_value()) == []
    assert (
        len(Template.from_stack(checked_stack).find_resources("AWS::CloudWatch::Alarm")) == 3
    )  # DLQ, its arrivals, Errors
