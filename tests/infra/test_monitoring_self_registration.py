"""The generic constructs register themselves with the monitoring facade they are given (issue 42: a team
registered nine resources by hand)."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import App, Stack
from aws_cdk import aws_sns as sns

from constructs_lib.function import PipelineFunction, PipelineFunctionProps
from constructs_lib.generic_saga import LambdaTask, Saga, SagaProps, SagaStep
from constructs_lib.monitoring import Monitoring
from constructs_lib.queue import ResilientQueue, ResilientQueueProps


def test_monitoring_generic_constructs_register_themselves(tmp_path: Path) -> None:
    code = tmp_path / "worker"
    code.mkdir()
    (code / "handler.py").write_text("def handler(event, context):\n    return {}\n")
    stack = Stack(App(outdir=str(tmp_path / "cdk.out")), "SelfRegistering")
    monitoring = Monitoring(stack, "Monitoring")
    topic = sns.Topic(stack, "Topic")
    worker = PipelineFunction(
        stack,
        "Worker",
        props=PipelineFunctionProps(
            code_dir=code,
            service_name="book-flight",
            alarm_topic=topic,
            monitoring=monitoring,
            idempotency_metrics=True,
        ),
    )
    jobs = ResilientQueue(
        stack,
        "Jobs",
        props=ResilientQueueProps(
            alarm_topic=topic,
            consumer=worker.function,
            consumer_timeout=worker.timeout,
            alarm_on_queue_depth=True,
            monitoring=monitoring,
        ),
    )
    saga = Saga(
        stack,
        "Booking",
        props=SagaProps(
            steps=[SagaStep("Book", LambdaTask(worker.function))], alarm_topic=topic, monitoring=monitoring
        ),
    )
    monitoring.build_dashboard()

    (queue,) = monitoring.queues
    assert (queue.label, queue.queue, queue.dlq) == ("Jobs", jobs.queue, jobs.dlq)
    own = (jobs.dlq_alarm, jobs.dlq_arrivals_alarm, jobs.queue_alarm, jobs.queue_arrivals_alarm, jobs.age_alarm)
    assert set(queue.alarms) == {a for a in own if a is not None} and jobs.queue_alarm in queue.alarms
    assert monitoring.state_machine is saga.state_machine
    alarms = set(monitoring.alarms)
    assert worker.errors_alarm in alarms and monitoring.services == ["book-flight"]
    assert set(saga.alarms.values()) <= alarms
