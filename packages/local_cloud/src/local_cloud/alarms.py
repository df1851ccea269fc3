"""CloudWatch alarm evaluation, emulated: moto stores alarms but never evaluates them."""

from __future__ import annotations

import time
from typing import Any

from local_cloud.alarm_actions import AlarmActions, Notice
from local_cloud.capture import LineCapture
from local_cloud.clients import aws

#: Step Functions execution metrics -> the execution status each counts.
EXECUTION_METRICS = {
    "ExecutionsFailed": "FAILED",
    "ExecutionsTimedOut": "TIMED_OUT",
    "ExecutionsAborted": "ABORTED",
    "ExecutionsSucceeded": "SUCCEEDED",
}


class AlarmEvaluator:
    """Evaluates the template's alarms against queue depths and the handlers' EMF datapoints."""

    def __init__(
        self,
        alarms: dict[str, dict[str, Any]],
        queues: dict[str, dict[str, str]],
        capture: LineCapture,
        actions: AlarmActions | None = None,
    ) -> None:
        self.alarms = alarms  # name -> put_metric_alarm kwargs, as deployed
        self.queue_urls = {q["name"]: q["url"] for q in queues.values()}
        self.capture = capture
        self.actions = actions
        #: Each alarm's state as CloudWatch holds it; a new alarm starts in INSUFFICIENT_DATA.
        self.states = dict.fromkeys(alarms, "INSUFFICIENT_DATA")

    def transition(self, name: str, new: str, reason: str) -> list[Notice]:
        """Set ``name``'s state; on a change, store it in moto and execute the new state's actions."""
        old = self.states[name]
        if new == old:
            return []
        self.states[name] = new
        aws("cloudwatch").set_alarm_state(AlarmName=name, StateValue=new, StateReason=reason)
        return self.actions.execute(self.alarms[name], old, new, reason) if self.actions else []

    def sqs_depth(self, alarm: dict[str, Any]) -> float | None:
        """ApproximateNumberOfMessages of the queue the alarm's dimension names (None: not ours)."""
        queue = next((d["Value"] for d in alarm["Dimensions"] if d["Name"] == "QueueName"), None)
        if queue not in self.queue_urls:
            return None
        attrs = aws("sqs").get_queue_attributes(
            QueueUrl=self.queue_urls[queue], AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        return float(attrs["ApproximateNumberOfMessages"])

    def state_machine_executions(self, alarm: dict[str, Any]) -> float | None:
        """``AWS/States`` execution metrics (``ExecutionsFailed``, ``ExecutionsTimedOut``,
        ``ExecutionsAborted``, ``ExecutionsSucceeded``) of the alarm's ``StateMachineArn``: the number
        of executions that ended with that status within the alarm's last period (the Sum statistic
        over one period, as the alarms declare). None: not an execution metric, or no such machine.
        Metric definitions: https://docs.aws.amazon.com/step-functions/latest/dg/procedure-cw-metrics.html
        """
        status = EXECUTION_METRICS.get(alarm["MetricName"])
        arn = next((d["Value"] for d in alarm["Dimensions"] if d["Name"] == "StateMachineArn"), None)
        if status is None or arn is None:
            return None
        since = time.time() - float(alarm.get("Period", 60)) * float(alarm.get("EvaluationPeriods", 1))
        count = 0
        try:
            pages = (
                aws("stepfunctions").get_paginator("list_executions").paginate(stateMachineArn=arn, statusFilter=status)
            )
            for page in pages:
                count += sum(1 for e in page["executions"] if e.get("stopDate") and e["stopDate"].timestamp() >= since)
        except aws("stepfunctions").exceptions.StateMachineDoesNotExist:
            return None
        return float(count) if count else None  # no execution ended so: no datapoint (missing data)

    def latest_emf(self, alarm: dict[str, Any]) -> float | None:
        """The most recent datapoint the handlers printed (EMF) for the alarm's metric and dimensions."""
        wanted = {d["Name"]: d["Value"] for d in alarm["Dimensions"]}
        latest = None
        for doc in self.capture.records()[1]:
            for directive in doc["_aws"].get("CloudWatchMetrics", []):
                names = {m["Name"] for m in directive.get("Metrics", [])}
                if directive.get("Namespace") != alarm["Namespace"] or alarm["MetricName"] not in names:
                    continue
                if all(str(doc.get(k)) == v for k, v in wanted.items()):
                    value = doc[alarm["MetricName"]]
                    latest = float(max(value) if isinstance(value, list) else value)
        return latest

    def evaluate(self) -> list[str]:
        """Set each alarm's state in moto; return the alarms in ALARM (sorted).

        SQS depth alarms read the queue; Step Functions execution alarms count the executions that
        ended with their status in the last period; custom-metric alarms read the latest EMF
        datapoint the handlers printed. No datapoint = missing data = not breaching (as the alarms declare).
        """
        for name, alarm in self.alarms.items():
            if alarm["Namespace"] == "AWS/SQS" and alarm["MetricName"] == "ApproximateNumberOfMessagesVisible":
                value = self.sqs_depth(alarm)
            elif alarm["Namespace"] == "AWS/States":
                value = self.state_machine_executions(alarm)
            else:
                value = self.latest_emf(alarm)
            breaching = value is not None and (
                value > alarm["Threshold"]
                if alarm["ComparisonOperator"] == "GreaterThanThreshold"
                else value >= alarm["Threshold"]
            )
            self.transition(name, "ALARM" if breaching else "OK", f"local evaluation: {alarm['MetricName']} = {value}")
        return sorted(name for name, state in self.states.items() if state == "ALARM")

    def dlq_states(self, in_alarm: list[str], depths: dict[str, int]) -> dict[str, dict[str, Any]]:
        """Per DLQ (by name): its alarm, whether it is in ALARM, and its depth."""
        states = {}
        for alarm_name, alarm in self.alarms.items():
            queue = next((d["Value"] for d in alarm["Dimensions"] if d["Name"] == "QueueName"), None)
            if queue in depths:
                states[queue] = {"alarm": alarm_name, "in_alarm": alarm_name in in_alarm, "depth": depths[queue]}
        return states
