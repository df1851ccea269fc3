"""constructs_lib.dashboard.PipelineDashboard: the widgets' metrics, read from the synthesized DashboardBody."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Template

from constructs_lib.dashboard import (
    DashboardGraph,
    DashboardQueue,
    DashboardTitles,
    PipelineDashboard,
    PipelineDashboardProps,
)
from constructs_lib.function import DEFAULT_METRICS_NAMESPACE
from constructs_lib.queue import ResilientQueue, ResilientQueueProps
from tests.infra.conftest import PLACEHOLDER, cfn, join_to_string

SERVICES = ("intake", "charge-payment", "ship-order")
NAMESPACE = "Shop"
SQS = "AWS/SQS"
STATES = "AWS/States"

#: A metric as the dashboard lists it: (namespace, name, dimension name, dimension value).
MetricKey = tuple[str, str, str, str]


@dataclass(frozen=True)
class Built:
    """A small stack holding one dashboard, synthesized."""

    stack: Stack
    dashboard: PipelineDashboard
    queues: tuple[ResilientQueue, ResilientQueue]
    state_machine: sfn.StateMachine | None
    template: Template

    def ref(self, construct: Any, attr: str | None = None) -> str:
        """Placeholder of an L2's default child as :func:`join_to_string` renders it."""
        logical_id = self.stack.get_logical_id(construct.node.default_child)
        return f"{PLACEHOLDER}<{logical_id}.{attr}>" if attr else f"{PLACEHOLDER}<{logical_id}>"

    def body(self) -> dict[str, Any]:
        (resource,) = self.template.find_resources("AWS::CloudWatch::Dashboard").values()
        return json.loads(join_to_string(resource["Properties"]["DashboardBody"]))

    def metric_rows(self) -> list[tuple[MetricKey, dict[str, Any]]]:
        """Every plain metric of every graph: its key and its options (label, stat, id ...)."""
        rows = []
        for widget in self.body()["widgets"]:
            for row in widget["properties"].get("metrics", []):
                if isinstance(row[0], str):  # a metric; ``[{"expression": ...}]`` is metric math
                    options = row[-1] if isinstance(row[-1], dict) else {}
                    namespace, name, dim_name, dim_value = row[:4]
                    rows.append(((namespace, name, dim_name, dim_value), options))
        return rows

    def metric_keys(self) -> set[MetricKey]:
        return {key for key, _ in self.metric_rows()}

    def expressions(self) -> dict[str, str]:
        """Metric-math expressions by label."""
        return {
            row[0]["label"]: row[0]["expression"]
            for widget in self.body()["widgets"]
            for row in widget["properties"].get("metrics", [])
            if isinstance(row[0], dict) and "expression" in row[0]
        }


def _charted(queue: ResilientQueue) -> DashboardQueue:
    """A ``ResilientQueue`` as the dashboard charts it (the monitoring facade registers the same)."""
    return DashboardQueue(queue.node.id, queue.queue, queue.dlq, (queue.dlq_alarm, *filter(None, [queue.queue_alarm])))


def _stack() -> tuple[Stack, tuple[ResilientQueue, ResilientQueue], sfn.StateMachine]:
    stack = Stack(App(), "DashboardUnderTest")
    topic = sns.Topic(stack, "AlarmTopic")
    orders = ResilientQueue(stack, "OrdersQueue", props=ResilientQueueProps(alarm_topic=topic))
    attention = ResilientQueue(
        stack, "NeedsAttentionQueue", props=ResilientQueueProps(alarm_topic=topic, alarm_on_queue_depth=True)
    )
    machine = sfn.StateMachine(
        stack, "Saga", definition_body=sfn.DefinitionBody.from_chainable(sfn.Pass(stack, "Noop"))
    )
    return stack, (orders, attention), machine


def _stuck_graph(namespace: str = NAMESPACE, service: str = "sweeper") -> DashboardGraph:
    metric = cloudwatch.Metric(
        namespace=namespace,
        metric_name="StuckOrders",
        dimensions_map={"service": service},
        statistic="Maximum",
        period=Duration.minutes(5),
        label="Stuck orders",
    )
    return DashboardGraph("Stuck orders (sweeper)", [metric], label="orders")


def _build(**overrides: Any) -> Built:
    """The dashboard as an app wires it: its namespace, a state machine and one extra graph."""
    stack, queues, machine = _stack()
    kwargs: dict[str, Any] = {
        "queues": [_charted(q) for q in queues],
        "state_machine": machine,
        "services": list(SERVICES),
        "metrics_namespace": NAMESPACE,
        "extra_graphs": [_stuck_graph()],
        **overrides,
    }
    props = PipelineDashboardProps(**kwargs)
    dashboard = PipelineDashboard(stack, "Dashboard", props=props)
    return Built(stack, dashboard, queues, machine, Template.from_stack(stack))


@pytest.fixture(scope="module")
def built() -> Built:
    return _build()


def test_dashboard_is_one_resource_exposed_as_attribute(built: Built) -> None:
    dashboards = built.template.find_resources("AWS::CloudWatch::Dashboard")
    assert len(dashboards) == 1
    assert built.stack.get_logical_id(cfn(built.dashboard.dashboard)) in dashboards


@pytest.mark.parametrize(
    "metric_name",
    [
        "ApproximateNumberOfMessagesVisible",
        "ApproximateAgeOfOldestMessage",
        "DuplicatesSuppressed",
        "PayloadMismatches",
        "IdempotencyTakeovers",
        "ExecutionsSucceeded",
        "ExecutionsFailed",
        "ExecutionsTimedOut",
        "StuckOrders",
    ],
)
def test_dashboard_shows_metric(built: Built, metric_name: str) -> None:
    assert metric_name in {name for _, name, _, _ in built.metric_keys()}


@pytest.mark.parametrize("metric_name", ["ApproximateNumberOfMessagesVisible", "ApproximateAgeOfOldestMessage"])
def test_dashboard_charts_every_queue_and_dlq(built: Built, metric_name: str) -> None:
    keys = built.metric_keys()
    for queue in built.queues:
        for sqs_queue in (queue.queue, queue.dlq):
            assert (SQS, metric_name, "QueueName", built.ref(sqs_queue, "QueueName")) in keys, sqs_queue.node.path


def test_dashboard_queue_metrics_use_maximum_per_minute(built: Built) -> None:
    sqs_rows = [options for key, options in built.metric_rows() if key[0] == SQS]
    assert len(sqs_rows) == 2 * 2 + 2 * 2  # depth of 2 queues + 2 DLQs, age of the same 4
    for options in sqs_rows:
        assert options["stat"] == "Maximum"
        assert options["period"] == 60


@pytest.mark.parametrize("metric_name", ["DuplicatesSuppressed", "PayloadMismatches", "IdempotencyTakeovers"])
def test_dashboard_sums_idempotency_metric_over_services(built: Built, metric_name: str) -> None:
    rows = {key[3]: options for key, options in built.metric_rows() if key[:3] == (NAMESPACE, metric_name, "service")}
    assert set(rows) == set(SERVICES)
    for options in rows.values():
        assert options["stat"] == "Sum"
        assert options["visible"] is False  # only the sum is drawn
    expression = built.expressions()[metric_name]
    assert expression.startswith("SUM([")
    for options in rows.values():
        assert f"FILL({options['id']}, 0)" in expression


def test_dashboard_charts_saga_executions(built: Built) -> None:
    assert built.state_machine is not None
    arn = built.ref(built.state_machine)
    keys = built.metric_keys()
    for name in ("ExecutionsSucceeded", "ExecutionsFailed", "ExecutionsTimedOut"):
        assert (STATES, name, "StateMachineArn", arn) in keys


def test_dashboard_charts_stuck_orders_maximum(built: Built) -> None:
    rows = [options for key, options in built.metric_rows() if key == (NAMESPACE, "StuckOrders", "service", "sweeper")]
    assert len(rows) == 1
    assert rows[0]["stat"] == "Maximum"


def test_dashboard_shows_queue_alarm_status(built: Built) -> None:
    (alarm_widget,) = [w for w in built.body()["widgets"] if w["type"] == "alarm"]
    orders, attention = built.queues
    assert attention.queue_alarm is not None
    expected = [built.ref(a, "Arn") for a in (orders.dlq_alarm, attention.dlq_alarm, attention.queue_alarm)]
    assert alarm_widget["properties"]["alarms"] == expected


def test_dashboard_widgets_fit_the_grid(built: Built) -> None:
    widgets = built.body()["widgets"]
    assert len(widgets) == 7
    for widget in widgets:
        assert widget["x"] + widget["width"] <= 24


def test_dashboard_uses_custom_namespace_and_name() -> None:
    custom = _build(
        metrics_namespace="Custom", extra_graphs=[_stuck_graph("Custom", "janitor")], dashboard_name="orders-dev"
    )
    keys = custom.metric_keys()
    assert ("Custom", "StuckOrders", "service", "janitor") in keys
    assert ("Custom", "DuplicatesSuppressed", "service", "intake") in keys
    assert not {k for k in keys if k[0] == NAMESPACE}
    (resource,) = custom.template.find_resources("AWS::CloudWatch::Dashboard").values()
    assert resource["Properties"]["DashboardName"] == "orders-dev"


def test_dashboard_defaults_hold_no_app_vocabulary() -> None:
    """Left to its defaults the generic dashboard says nothing about orders, sagas or sweepers."""
    stack, queues, _ = _stack()
    dashboard = PipelineDashboard(
        stack, "Dashboard", props=PipelineDashboardProps(queues=[_charted(q) for q in queues], services=["svc"])
    )
    built = Built(stack, dashboard, queues, None, Template.from_stack(stack))
    titles = [w["properties"].get("title", "") for w in built.body()["widgets"]]
    assert titles == [
        "Queue depth (visible messages)",
        "DLQ depth (each is a message that failed processing)",
        "Oldest message age",
        "Idempotency (sum over 1 services)",
        "Queue alarms",
    ]
    assert not [t for t in titles if any(word in t.lower() for word in ("order", "saga", "sweeper"))]
    # no state machine: no executions graph; the namespace is the function construct's default
    assert not {k for k in built.metric_keys() if k[0] == STATES}
    assert {k[0] for k in built.metric_keys() if k[0] != SQS} == {DEFAULT_METRICS_NAMESPACE} == {"ResilientPipeline"}


def test_dashboard_titles_from_props() -> None:
    titles = DashboardTitles(dlq_depth="DLQ depth (orders)", executions="Saga executions", other_alarms="All alarms")
    stack, queues, machine = _stack()
    extra = [machine.metric_failed().create_alarm(stack, "Failed", threshold=0, evaluation_periods=1)]
    props = PipelineDashboardProps(
        queues=[_charted(q) for q in queues],
        state_machine=machine,
        services=list(SERVICES),
        titles=titles,
        alarms=extra,
    )
    built = Built(stack, PipelineDashboard(stack, "D", props=props), queues, machine, Template.from_stack(stack))
    shown = [w["properties"]["title"] for w in built.body()["widgets"]]
    assert "DLQ depth (orders)" in shown
    assert "Saga executions" in shown
    assert shown[-1] == "All alarms"
    assert f"Idempotency (sum over {len(SERVICES)} services)" in shown


def test_dashboard_extra_graphs_wrap_three_to_a_row() -> None:
    graphs = [DashboardGraph(f"G{i}", [cloudwatch.Metric(namespace=NAMESPACE, metric_name=f"M{i}")]) for i in range(3)]
    built = _build(extra_graphs=graphs)
    widgets = [w for w in built.body()["widgets"] if w["type"] == "metric"]
    # row 1: 3 queue graphs; row 2: idempotency, executions, G0; row 3: G1, G2
    assert [w["properties"]["title"] for w in widgets[3:]] == [
        "Idempotency (sum over 3 services)",
        "Workflow executions",
        "G0",
        "G1",
        "G2",
    ]
    assert widgets[5]["y"] == widgets[3]["y"] < widgets[6]["y"] == widgets[7]["y"]
    assert [w["x"] for w in widgets[6:]] == [0, 8]


def test_dashboard_graph_without_metrics_rejected() -> None:
    with pytest.raises(ValueError, match="needs at least one metric"):
        DashboardGraph("empty", [])


_ALARM_SCOPE = Stack(App(), "AlarmScope")


def _placeholder_alarm(i: int) -> cloudwatch.IAlarm:
    return cloudwatch.Alarm.from_alarm_arn(
        _ALARM_SCOPE, f"A{i}", f"arn:aws:cloudwatch:us-east-1:123456789012:alarm:a{i}"
    )


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"queues": []}, "queues"),
        ({"services": []}, "services"),
        ({"services": ["intake", " "]}, "blank"),
        ({"services": ["intake", "intake"]}, "duplicates"),
        ({"period": Duration.seconds(90)}, "period"),
        ({"alarms": [_placeholder_alarm(i) for i in range(101)]}, "at most 100 alarms"),
    ],
    ids=["empty-queues", "empty-services", "blank-service", "duplicate-services", "odd-period", "too-many-alarms"],
)
def test_dashboard_rejects_bad_props(overrides: dict[str, Any], message: str) -> None:
    _, queues, machine = _stack()
    kwargs: dict[str, Any] = {
        "queues": [_charted(q) for q in queues],
        "state_machine": machine,
        "services": list(SERVICES),
    }
    with pytest.raises(ValueError, match=message):
        PipelineDashboardProps(**{**kwargs, **overrides})


def test_dashboard_shows_further_alarms_in_own_status_widget() -> None:
    stack, queues, machine = _stack()
    extra = [
        machine.metric_failed().create_alarm(stack, "Failed", threshold=0, evaluation_periods=1),
        machine.metric_timed_out().create_alarm(stack, "TimedOut", threshold=0, evaluation_periods=1),
    ]
    props = PipelineDashboardProps(
        queues=[_charted(q) for q in queues], state_machine=machine, services=list(SERVICES), alarms=extra
    )
    dashboard = PipelineDashboard(stack, "Dashboard", props=props)
    built = Built(stack, dashboard, queues, machine, Template.from_stack(stack))
    queue_widget, further = [w for w in built.body()["widgets"] if w["type"] == "alarm"]
    assert len(queue_widget["properties"]["alarms"]) == 3
    assert further["properties"]["alarms"] == [built.ref(a, "Arn") for a in extra]
    assert further["properties"]["title"] == "Other alarms"
    assert further["width"] == 24


def test_dashboard_charts_existing_queues_wrapped_by_resilient_queue() -> None:
    stack = Stack(App(), "DashboardUnderTest")
    topic = sns.Topic.from_topic_arn(stack, "Topic", "arn:aws:sns:us-east-1:123456789012:alarms")
    wrapped = ResilientQueue(
        stack,
        "Legacy",
        props=ResilientQueueProps(
            alarm_topic=topic,
            existing_queue=sqs.Queue.from_queue_arn(stack, "Q", "arn:aws:sqs:us-east-1:123456789012:legacy"),
            existing_dead_letter_queue=sqs.Queue.from_queue_arn(
                stack, "D", "arn:aws:sqs:us-east-1:123456789012:legacy-dlq"
            ),
        ),
    )
    dashboard = PipelineDashboard(
        stack, "Dashboard", props=PipelineDashboardProps(queues=[_charted(wrapped)], services=["svc"])
    )
    built = Built(stack, dashboard, (wrapped, wrapped), None, Template.from_stack(stack))
    keys = built.metric_keys()
    for name in ("legacy", "legacy-dlq"):
        assert (SQS, "ApproximateNumberOfMessagesVisible", "QueueName", name) in keys
        assert (SQS, "ApproximateAgeOfOldestMessage", "QueueName", name) in keys


def test_dashboard_charts_any_queue_without_a_dlq() -> None:
    """Generic: an imported ``sqs.IQueue``, no ``ResilientQueue``, no DLQ: no DLQ graph, no queue alarm strip."""
    stack = Stack(App(), "DashboardUnderTest")
    plain = sqs.Queue.from_queue_arn(stack, "Q", "arn:aws:sqs:us-east-1:123456789012:plain")
    props = PipelineDashboardProps(queues=[DashboardQueue("Plain", plain)], services=["svc"])
    built = Built(stack, PipelineDashboard(stack, "Dashboard", props=props), (), None, Template.from_stack(stack))  # type: ignore[arg-type]
    titles = [w["properties"].get("title", "") for w in built.body()["widgets"]]
    assert titles == ["Queue depth (visible messages)", "Oldest message age", "Idempotency (sum over 1 services)"]
    assert {k[3] for k in built.metric_keys() if k[0] == SQS} == {"plain"}


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda q: PipelineDashboardProps(queues=[DashboardQueue("A", q), DashboardQueue("A", q)], services=["s"]),
            "unique",
        ),
        (lambda q: DashboardQueue(" ", q), "label"),
    ],
    ids=["duplicate-labels", "blank-label"],
)
def test_dashboard_rejects_bad_queue_props(build: Any, message: str) -> None:
    stack = Stack(App(), "DashboardUnderTest")
    queue = sqs.Queue.from_queue_arn(stack, "Q", "arn:aws:sqs:us-east-1:123456789012:plain")
    with pytest.raises(ValueError, match=message):
        build(queue)
