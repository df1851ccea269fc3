"""Queues, dead-letter queues, DLQ alarms and the orders event source mapping (dev template)."""

from __future__ import annotations

from typing import Any

import pytest

from constructs_lib.queue import DLQ_RETENTION, VISIBILITY_TO_TIMEOUT_RATIO
from tests.infra.conftest import SynthResult

FOURTEEN_DAYS_S = 1_209_600


@pytest.fixture(scope="module")
def queues(dev: SynthResult) -> dict[str, dict[str, Any]]:
    found = dev.of_type("AWS::SQS::Queue")
    assert len(found) == 4, "expected the orders and needs-attention queues, each with its DLQ"
    return found


@pytest.fixture(scope="module")
def dlq_ids(queues: dict[str, dict[str, Any]]) -> set[str]:
    """Logical IDs that some queue's RedrivePolicy points at."""
    ids = set()
    for queue in queues.values():
        redrive = queue["Properties"].get("RedrivePolicy")
        if redrive:
            ids.add(redrive["deadLetterTargetArn"]["Fn::GetAtt"][0])
    assert ids, "no queue has a dead-letter queue"
    return ids


def test_queues_use_sqs_managed_sse(queues: dict[str, dict[str, Any]]) -> None:
    for logical_id, queue in queues.items():
        assert queue["Properties"].get("SqsManagedSseEnabled") is True, logical_id
        assert "KmsMasterKeyId" not in queue["Properties"], logical_id


def test_queues_have_policy_denying_insecure_transport(dev: SynthResult, queues: dict[str, dict[str, Any]]) -> None:
    policies = dev.of_type("AWS::SQS::QueuePolicy").values()
    for logical_id in queues:
        attached = [p["Properties"] for p in policies if {"Ref": logical_id} in p["Properties"]["Queues"]]
        assert attached, f"{logical_id} has no queue policy"
        deny_statements = [
            s
            for p in attached
            for s in p["PolicyDocument"]["Statement"]
            if s["Effect"] == "Deny"
            and s.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}
            and s["Action"] == "sqs:*"
            and s["Principal"] == {"AWS": "*"}
            and s["Resource"] == {"Fn::GetAtt": [logical_id, "Arn"]}
        ]
        assert deny_statements, f"{logical_id} does not deny non-TLS access"


def test_queues_without_dlq_role_have_redrive_policy(
    dev: SynthResult, queues: dict[str, dict[str, Any]], dlq_ids: set[str]
) -> None:
    sources = {k: v for k, v in queues.items() if k not in dlq_ids}
    assert sources
    for logical_id, queue in sources.items():
        redrive = queue["Properties"].get("RedrivePolicy")
        assert redrive, f"{logical_id} has no dead-letter queue"
        # The orders queue (a Lambda consumer): 5, as AWS advises (tests/infra/test_time_budget.py); others: 3.
        assert redrive["maxReceiveCount"] in (dev.stack.orders_queue.max_receive_count, 3)
        assert redrive["deadLetterTargetArn"]["Fn::GetAtt"][0] in queues


def test_dlqs_retain_messages_fourteen_days(queues: dict[str, dict[str, Any]], dlq_ids: set[str]) -> None:
    assert DLQ_RETENTION.to_seconds() == FOURTEEN_DAYS_S
    for logical_id in dlq_ids:
        props = queues[logical_id]["Properties"]
        assert props["MessageRetentionPeriod"] == FOURTEEN_DAYS_S, logical_id
        assert "RedrivePolicy" not in props, f"DLQ {logical_id} must not redrive further"


def test_dlqs_outlive_source_queue_retention(queues: dict[str, dict[str, Any]], dlq_ids: set[str]) -> None:
    # A message's age counts from its first enqueue: a DLQ shorter than its source would drop it early.
    # A source already at the SQS maximum (14 days) can only be matched, not outlived.
    for logical_id, queue in queues.items():
        redrive = queue["Properties"].get("RedrivePolicy")
        if redrive:
            source_s = queue["Properties"]["MessageRetentionPeriod"]
            dlq_s = queues[redrive["deadLetterTargetArn"]["Fn::GetAtt"][0]]["Properties"]["MessageRetentionPeriod"]
            if source_s < FOURTEEN_DAYS_S:
                assert dlq_s > source_s, logical_id
            else:
                assert dlq_s == source_s == FOURTEEN_DAYS_S, logical_id


def test_orders_dlq_outlives_orders_queue(dev: SynthResult) -> None:
    queue = dev.properties(dev.logical_id(dev.stack.orders_queue.queue))
    dlq = dev.properties(dev.logical_id(dev.stack.orders_queue.dlq))
    assert queue["MessageRetentionPeriod"] == 4 * 24 * 3600
    assert dlq["MessageRetentionPeriod"] == FOURTEEN_DAYS_S > queue["MessageRetentionPeriod"]


def test_orders_queue_refuses_bodies_over_the_contract_and_its_dlq_holds_what_it_accepts(dev: SynthResult) -> None:
    """The orders queue's MaximumMessageSize is the 64 KiB contract plus an allowance for message
    attributes (SQS counts them); its DLQ holds the largest accepted message plus intake's attributes."""
    from order_domain.model import MAX_BODY_BYTES
    from stacks.order_pipeline_stack import ORDER_ATTRIBUTES_ALLOWANCE_BYTES, ORDER_BODY_MAX_BYTES

    assert ORDER_BODY_MAX_BYTES == MAX_BODY_BYTES == 65_536
    queue = dev.properties(dev.logical_id(dev.stack.orders_queue.queue))
    dlq = dev.properties(dev.logical_id(dev.stack.orders_queue.dlq))
    assert queue["MaximumMessageSize"] == MAX_BODY_BYTES + ORDER_ATTRIBUTES_ALLOWANCE_BYTES == 69_632
    assert dlq["MaximumMessageSize"] == 1_048_576  # the SQS maximum: an accepted body + the dlq_* attributes
    assert dlq["MaximumMessageSize"] >= queue["MaximumMessageSize"] + 10 * 1024


@pytest.mark.parametrize("size", [1_023, 1_048_577, 0])
def test_resilient_queue_refuses_a_max_message_size_out_of_sqs_range(size: int) -> None:
    from aws_cdk import App, Stack
    from aws_cdk import aws_sns as sns

    from constructs_lib.queue import ResilientQueueProps

    topic = sns.Topic(Stack(App(), "S"), "T")
    with pytest.raises(ValueError, match=r"max_message_size_bytes must be within 1024\.\.1048576"):
        ResilientQueueProps(alarm_topic=topic, max_message_size_bytes=size)


@pytest.mark.parametrize("size", [1_024, 1_048_576])
def test_resilient_queue_accepts_the_sqs_range_bounds(size: int) -> None:
    from aws_cdk import App, Stack
    from aws_cdk import aws_sns as sns
    from aws_cdk.assertions import Template

    from constructs_lib.queue import ResilientQueue, ResilientQueueProps

    stack = Stack(App(), "S")
    ResilientQueue(
        stack, "Q", props=ResilientQueueProps(alarm_topic=sns.Topic(stack, "T"), max_message_size_bytes=size)
    )
    sizes = sorted(
        q["Properties"].get("MaximumMessageSize")
        for q in Template.from_stack(stack).find_resources("AWS::SQS::Queue").values()
    )
    assert sizes == sorted([size, 1_048_576])


def test_orders_queue_visibility_covers_six_intake_timeouts(dev: SynthResult) -> None:
    queue = dev.properties(dev.logical_id(dev.stack.orders_queue.queue))
    intake = dev.properties(dev.logical_id(dev.stack.intake.function))
    assert intake["Timeout"] == 30
    assert queue["VisibilityTimeout"] >= VISIBILITY_TO_TIMEOUT_RATIO * intake["Timeout"]
    assert VISIBILITY_TO_TIMEOUT_RATIO == 6


def test_dlq_alarms_fire_on_first_visible_message(dev: SynthResult, dlq_ids: set[str]) -> None:
    alarms = dev.of_type("AWS::CloudWatch::Alarm")
    for dlq_id in dlq_ids:
        dimension = {"Name": "QueueName", "Value": {"Fn::GetAtt": [dlq_id, "QueueName"]}}
        on_dlq = {k: a["Properties"] for k, a in alarms.items() if dimension in a["Properties"].get("Dimensions", [])}
        assert len(on_dlq) == 1, f"DLQ {dlq_id} should have exactly one depth alarm, got {sorted(on_dlq)}"
        (props,) = on_dlq.values()
        assert props["MetricName"] == "ApproximateNumberOfMessagesVisible"
        assert props["Namespace"] == "AWS/SQS"
        assert props["Dimensions"] == [dimension]
        assert props["Period"] == 60
        assert props["EvaluationPeriods"] == 1
        assert props["Threshold"] == 0
        assert props["ComparisonOperator"] == "GreaterThanThreshold"
        assert props["TreatMissingData"] == "notBreaching"
        assert dev.notifies(props) == [{"Ref": dev.logical_id(dev.stack.alarm_topic)}]  # through OrdersAtRisk (0030)
        assert "OKActions" not in props


def test_alarm_topic_encrypted_with_key_cloudwatch_can_use(dev: SynthResult) -> None:
    (key_id,) = dev.of_type("AWS::KMS::Key")
    topic = dev.properties(dev.logical_id(dev.stack.alarm_topic))
    assert topic["KmsMasterKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}
    key = dev.properties(key_id)
    assert key["EnableKeyRotation"] is True
    cloudwatch = [
        s for s in key["KeyPolicy"]["Statement"] if s.get("Principal") == {"Service": "cloudwatch.amazonaws.com"}
    ]
    assert cloudwatch, "CloudWatch alarms cannot publish to the topic without kms:Decrypt/GenerateDataKey*"
    assert {"kms:Decrypt", "kms:GenerateDataKey*"} <= {a for s in cloudwatch for a in s["Action"]}


def test_orders_event_source_mapping_reports_batch_item_failures(dev: SynthResult) -> None:
    dev.template.resource_count_is("AWS::Lambda::EventSourceMapping", 1)
    dev.template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "FunctionResponseTypes": ["ReportBatchItemFailures"],
            "BatchSize": 10,
            "EventSourceArn": {"Fn::GetAtt": [dev.logical_id(dev.stack.orders_queue.queue), "Arn"]},
            "FunctionName": {"Ref": dev.logical_id(dev.stack.intake.function)},
        },
    )
    (mapping,) = dev.of_type("AWS::Lambda::EventSourceMapping").values()
    # batch_size 10 needs no batching window; without it, Lambda polls as soon as messages arrive.
    assert "MaximumBatchingWindowInSeconds" not in mapping["Properties"]


# --- the needs-attention queue ------------------------------------------------------------------


def _alarms_on(dev: SynthResult, queue_logical_id: str) -> dict[str, dict[str, Any]]:
    dimension = {"Name": "QueueName", "Value": {"Fn::GetAtt": [queue_logical_id, "QueueName"]}}
    return {
        k: a["Properties"]
        for k, a in dev.of_type("AWS::CloudWatch::Alarm").items()
        if dimension in a["Properties"].get("Dimensions", [])
    }


def test_needs_attention_queue_keeps_messages_fourteen_days_with_dlq(dev: SynthResult) -> None:
    queue_id = dev.logical_id(dev.stack.needs_attention.queue)
    dlq_id = dev.logical_id(dev.stack.needs_attention.dlq)
    props = dev.properties(queue_id)
    assert props["MessageRetentionPeriod"] == FOURTEEN_DAYS_S
    assert props["RedrivePolicy"] == {"deadLetterTargetArn": {"Fn::GetAtt": [dlq_id, "Arn"]}, "maxReceiveCount": 3}
    assert props["SqsManagedSseEnabled"] is True
    assert dev.properties(dlq_id)["MessageRetentionPeriod"] == FOURTEEN_DAYS_S


def test_needs_attention_queue_has_no_consumer(dev: SynthResult) -> None:
    """Humans drain it: an event source mapping would swallow the very messages meant for them."""
    queue_arn = {"Fn::GetAtt": [dev.logical_id(dev.stack.needs_attention.queue), "Arn"]}
    assert dev.stack.needs_attention.event_source is None
    for mapping in dev.of_type("AWS::Lambda::EventSourceMapping").values():
        assert mapping["Properties"]["EventSourceArn"] != queue_arn


def test_needs_attention_queue_alarms_on_first_waiting_message(dev: SynthResult) -> None:
    """Besides the DLQ alarm every ResilientQueue has, a QueueDepthAlarm on the queue itself."""
    queue_id = dev.logical_id(dev.stack.needs_attention.queue)
    alarms = _alarms_on(dev, queue_id)
    assert len(alarms) == 1, sorted(alarms)
    ((alarm_id, props),) = alarms.items()
    assert alarm_id == dev.logical_id(dev.stack.needs_attention.queue_alarm)
    assert props["MetricName"] == "ApproximateNumberOfMessagesVisible"
    assert props["Namespace"] == "AWS/SQS"
    assert props["Statistic"] == "Maximum"
    assert props["Period"] == 60
    assert props["EvaluationPeriods"] == 1
    assert props["Threshold"] == 0
    assert props["ComparisonOperator"] == "GreaterThanThreshold"
    assert props["TreatMissingData"] == "notBreaching"
    # A silent level: the park messages outlive the repairs; its arrivals alarm pages through OrdersAtRisk (0030).
    assert dev.notifies(props) == []
    assert "OKActions" not in props
    # ... and its DLQ keeps its own alarm
    dlq_alarms = _alarms_on(dev, dev.logical_id(dev.stack.needs_attention.dlq))
    assert list(dlq_alarms) == [dev.logical_id(dev.stack.needs_attention.dlq_alarm)]


def test_orders_queue_has_no_depth_alarm(dev: SynthResult) -> None:
    """alarm_on_queue_depth defaults to False: a consumer-drained queue with a backlog is normal."""
    assert dev.stack.orders_queue.queue_alarm is None
    on_queue = _alarms_on(dev, dev.logical_id(dev.stack.orders_queue.queue))
    assert [a["MetricName"] for a in on_queue.values()] == ["ApproximateAgeOfOldestMessage"]  # its age only


def test_alarms_are_queue_sweeper_function_and_saga_alarms(dev: SynthResult) -> None:
    stack = dev.stack
    expected = {
        stack.orders_queue.dlq_alarm,
        stack.orders_queue.dlq_arrivals_alarm,
        stack.orders_queue.age_alarm,
        stack.needs_attention.dlq_alarm,
        stack.needs_attention.dlq_arrivals_alarm,
        stack.needs_attention.queue_alarm,
        stack.needs_attention.queue_arrivals_alarm,
        stack.stuck_alarm,
        stack.sweeper_heartbeat_alarm,
        stack.parked_alarm,
        stack.sweep_deferred_alarm,
        *stack.provider_outage_alarms,
        stack.mismatch_alarm,
        stack.sweeper_errors_alarm,
        *(f.errors_alarm for f in stack.functions),
        stack.intake.throttles_alarm,
        *stack.saga.alarms.values(),
        stack.order_api.errors_alarm,
        stack.webhook.errors_alarm,  # the providers' webhook route's 5XX (its function's errors are above)
    }
    assert set(dev.of_type("AWS::CloudWatch::Alarm")) == {dev.logical_id(a) for a in expected}


def test_queues_follow_stage_removal_policy(dev: SynthResult, prod: SynthResult) -> None:
    """Prod retains queues too: a stack delete must not drop parked orders or failed messages."""
    for synth, policy in ((dev, "Delete"), (prod, "Retain")):
        queues = synth.of_type("AWS::SQS::Queue")
        assert len(queues) == 4
        for logical_id, queue in queues.items():
            assert queue["DeletionPolicy"] == policy, logical_id
            assert queue["UpdateReplacePolicy"] == policy, logical_id
