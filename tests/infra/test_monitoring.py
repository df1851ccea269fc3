"""constructs_lib.monitoring.Monitoring: what constructs register is what the dashboard shows."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Template

from constructs_lib.dashboard import DashboardGraph, DashboardQueue, PipelineDashboard, PipelineDashboardProps
from constructs_lib.logical_ids import StableLogicalIdStack
from constructs_lib.monitoring import Monitoring, MonitoringProps
from tests.infra.conftest import PLACEHOLDER, InlineFunctionFactory, SynthResult, join_to_string

QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:{}"


def _body(template: Template) -> dict[str, Any]:
    (resource,) = template.find_resources("AWS::CloudWatch::Dashboard").values()
    return json.loads(join_to_string(resource["Properties"]["DashboardBody"]))


def _alarm(stack: Stack, construct_id: str, metric: cloudwatch.Metric) -> cloudwatch.Alarm:
    return metric.create_alarm(stack, construct_id, threshold=0, evaluation_periods=1)


def _ref(stack: Stack, alarm: cloudwatch.Alarm) -> str:
    return f"{PLACEHOLDER}<{stack.get_logical_id(alarm.node.default_child)}.Arn>"  # type: ignore[arg-type]


def test_monitoring_registered_resources_and_alarms_are_on_the_dashboard(
    inline_function: InlineFunctionFactory,
) -> None:
    """Imported queues and a plain function (no construct of this library): generic."""
    stack = Stack(App(), "MonitoringUnderTest")
    monitoring = Monitoring(stack, "Monitoring", props=MonitoringProps(metrics_namespace="Shop"))
    queue = sqs.Queue.from_queue_arn(stack, "Q", QUEUE_ARN.format("jobs"))
    dlq = sqs.Queue.from_queue_arn(stack, "D", QUEUE_ARN.format("jobs-dlq"))
    dlq_alarm = _alarm(stack, "DlqAlarm", dlq.metric_approximate_number_of_messages_visible())
    fn = inline_function(stack, "Worker", 30)
    errors = _alarm(stack, "Errors", fn.metric_errors())
    machine = sfn.StateMachine(stack, "Flow", definition_body=sfn.DefinitionBody.from_chainable(sfn.Pass(stack, "P")))
    failed = _alarm(stack, "Failed", machine.metric_failed())
    monitoring.monitor_queue(queue, label="Jobs", dlq=dlq, alarms=(dlq_alarm, None))
    monitoring.monitor_function(fn, alarms=(errors, None), idempotency_service="worker")
    monitoring.monitor_state_machine(machine, alarms=[failed])
    monitoring.add_graph(DashboardGraph("Custom", [cloudwatch.Metric(namespace="Shop", metric_name="Things")]))
    monitoring.build_dashboard()

    assert monitoring.alarms == (dlq_alarm, errors, failed)
    body = _body(Template.from_stack(stack))
    titles = [w["properties"].get("title") for w in body["widgets"]]
    assert "Custom" in titles and "Workflow executions" in titles
    strips = [w["properties"]["alarms"] for w in body["widgets"] if w["type"] == "alarm"]
    assert strips == [[_ref(stack, dlq_alarm)], [_ref(stack, errors), _ref(stack, failed)]]
    metric_rows = [row for w in body["widgets"] for row in w["properties"].get("metrics", [])]
    assert any(row[:4] == ["Shop", "DuplicatesSuppressed", "service", "worker"] for row in metric_rows)
    assert any(
        row[:4] == ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "jobs-dlq"] for row in metric_rows
    )


def test_monitoring_dashboard_keeps_its_logical_id_under_the_facade() -> None:
    """The facade is a transparent scope: the dashboard's ID is the one it has directly under the stack."""
    ids = []
    for under_facade in (False, True):
        stack = StableLogicalIdStack(App(), "S")
        queue = DashboardQueue("Jobs", sqs.Queue(stack, "Jobs"))
        if under_facade:
            monitoring = Monitoring(stack, "Monitoring")
            monitoring.monitor_queue(queue.queue, label="Jobs")
            monitoring.monitor_function(_noop_function(stack), idempotency_service="svc")
            monitoring.build_dashboard()
        else:
            PipelineDashboard(stack, "Dashboard", props=PipelineDashboardProps(queues=[queue], services=["svc"]))
        ids.append(set(Template.from_stack(stack).find_resources("AWS::CloudWatch::Dashboard")))
    assert ids[0] == ids[1]


def _noop_function(stack: Stack) -> Any:
    from aws_cdk import aws_lambda as lambda_

    return lambda_.Function.from_function_arn(stack, "Fn", "arn:aws:lambda:us-east-1:123456789012:function:fn")


def _facade() -> tuple[Stack, Monitoring]:
    stack = Stack(App(), "MonitoringUnderTest")
    return stack, Monitoring(stack, "Monitoring")


def test_monitoring_rejects_second_state_machine() -> None:
    stack, monitoring = _facade()
    machine = sfn.StateMachine.from_state_machine_name(stack, "M", "flow")
    monitoring.monitor_state_machine(machine)
    with pytest.raises(ValueError, match="one state machine per dashboard"):
        monitoring.monitor_state_machine(sfn.StateMachine.from_state_machine_name(stack, "M2", "other"))


def test_monitoring_rejects_service_registered_twice() -> None:
    stack, monitoring = _facade()
    fn = _noop_function(stack)
    monitoring.monitor_function(fn, idempotency_service="svc")
    with pytest.raises(ValueError, match="registered twice"):
        monitoring.monitor_function(fn, idempotency_service="svc")


def test_monitoring_rejects_queue_label_registered_twice() -> None:
    stack, monitoring = _facade()
    queue = sqs.Queue.from_queue_arn(stack, "Q", QUEUE_ARN.format("jobs"))
    monitoring.monitor_queue(queue, label="Jobs")
    with pytest.raises(ValueError, match="registered twice"):
        monitoring.monitor_queue(queue, label="Jobs")


def test_monitoring_rejects_registration_after_dashboard() -> None:
    stack, monitoring = _facade()
    monitoring.monitor_queue(sqs.Queue.from_queue_arn(stack, "Q", QUEUE_ARN.format("jobs")), label="Jobs")
    monitoring.monitor_function(_noop_function(stack), idempotency_service="svc")
    monitoring.build_dashboard()
    with pytest.raises(ValueError, match="after build_dashboard"):
        monitoring.add_alarms([_alarm(stack, "Late", cloudwatch.Metric(namespace="N", metric_name="M"))])
    with pytest.raises(ValueError, match="already called"):
        monitoring.build_dashboard()


def test_monitoring_without_dashboard_fails_synth() -> None:
    stack, monitoring = _facade()
    monitoring.monitor_queue(sqs.Queue.from_queue_arn(stack, "Q", QUEUE_ARN.format("jobs")), label="Jobs")
    with pytest.raises(Exception, match="build_dashboard"):
        Template.from_stack(stack)


def test_monitoring_pipeline_every_alarm_is_on_the_dashboard(dev: SynthResult) -> None:
    """Nothing collected by hand: each alarm of the stack reached the dashboard through the facade."""
    alarm_ids = set(dev.of_type("AWS::CloudWatch::Alarm"))
    body = _body(dev.template)
    shown = {arn for w in body["widgets"] if w["type"] == "alarm" for arn in w["properties"]["alarms"]}
    assert {f"{PLACEHOLDER}<{lid}.Arn>" for lid in alarm_ids} == shown
    assert len(dev.stack.monitoring.alarms) == len(alarm_ids)
