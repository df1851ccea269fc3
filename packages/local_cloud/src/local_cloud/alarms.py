"""CloudWatch alarm evaluation, emulated: moto stores alarms but never evaluates them.

Each alarm is evaluated as CloudWatch evaluates it
(https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html#alarm-evaluation):
the statistic of each of the last ``EvaluationPeriods`` periods of ``Period`` seconds, ALARM when
``DatapointsToAlarm`` of them breach the threshold, missing periods treated as ``TreatMissingData``
says (``missing``, ``ignore``, ``breaching``, ``notBreaching``). Metric-math alarms compute their
expression per period from their metrics (``FILL`` and arithmetic).

Evaluation runs on the simulated clock, once per period boundary passed since the last call (so a
datapoint that came and went between two calls is not missed), from the metrics of
:class:`local_cloud.metrics.MetricStore`; queue depths are gauges sampled at the call.
"""

from __future__ import annotations

import ast
import functools
import math
from collections.abc import Mapping
from typing import Any

from local_cloud.alarm_actions import AlarmActions, Notice
from local_cloud.calls import outside_the_pipeline
from local_cloud.capture import LineCapture
from local_cloud.clients import aws
from local_cloud.clock import SimClock
from local_cloud.composite_alarms import Composites
from local_cloud.metrics import EXECUTION_METRICS, MetricKey, MetricStore, metric_key, statistic
from local_cloud.moto_state import alarm_states, queue_depth, set_alarm_state
from local_cloud.template import ACCOUNT

__all__ = ["EXECUTION_METRICS", "AlarmEvaluator"]
#: At most this many period boundaries are replayed per call (a day of 1-minute periods).
MAX_CATCH_UP = 1440
#: Seconds between two evaluations of an alarm (one minute for periods of a minute or more).
EVALUATION_INTERVAL = 60.0
DEPTH = ("AWS/SQS", "ApproximateNumberOfMessagesVisible")
AGE = ("AWS/SQS", "ApproximateAgeOfOldestMessage")


def _expression(
    expr: str, values: Mapping[str, float | None], previous: Mapping[str, float | None] | None = None
) -> float | None:
    """A metric-math expression over one period's values: + - * /, numbers, ids, ``FILL(x, v)``, and
    ``DIFF(id)``: "the difference between each value in the time series and the preceding value from
    that time series" (``previous``: each metric's latest earlier datapoint;
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/using-metric-math.html#metric-math-syntax)."""

    def walk(node: ast.AST) -> float | None:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.Name):
            return values.get(node.id)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "FILL":
            got, fill = walk(node.args[0]), walk(node.args[1])
            return fill if got is None else got
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "DIFF":
            (arg,) = node.args
            if not isinstance(arg, ast.Name):
                raise ValueError(f"metric math not emulated (DIFF of an expression): {expr!r}")
            now, before = values.get(arg.id), (previous or {}).get(arg.id)
            return None if now is None or before is None else now - before
        if isinstance(node, ast.BinOp):
            left, right = walk(node.left), walk(node.right)
            if left is None or right is None:
                return None
            if isinstance(node.op, ast.Add):
                return left + right
            if isinstance(node.op, ast.Sub):
                return left - right
            if isinstance(node.op, ast.Mult):
                return left * right
            if isinstance(node.op, ast.Div):
                return left / right if right else None
        raise ValueError(f"metric math not emulated: {expr!r}")

    return walk(_parsed(expr))


@functools.lru_cache(maxsize=256)
def _parsed(expr: str) -> ast.Expression:
    """An expression's syntax tree, parsed once: an alarm's expression is evaluated for every period of
    every evaluation (parsing it each time was a tenth of a chaos run's CPU); the tree is only read."""
    return ast.parse(expr, mode="eval")


def _breaches(alarm: Mapping[str, Any], value: float) -> bool:
    threshold, op = float(alarm["Threshold"]), alarm["ComparisonOperator"]
    return {
        "GreaterThanThreshold": value > threshold,
        "GreaterThanOrEqualToThreshold": value >= threshold,
        "LessThanThreshold": value < threshold,
        "LessThanOrEqualToThreshold": value <= threshold,
    }[op]


class AlarmEvaluator:
    """Evaluates the template's alarms on the simulated clock and runs their actions on a state change."""

    def __init__(
        self,
        alarms: dict[str, dict[str, Any]],
        queues: dict[str, dict[str, str]],
        capture: LineCapture,
        actions: AlarmActions | None = None,
        store: MetricStore | None = None,
        clock: SimClock | None = None,
        composites: Composites | None = None,
    ) -> None:
        self.alarms = alarms  # name -> put_metric_alarm kwargs, as deployed
        #: The composite alarms over them (:mod:`local_cloud.composite_alarms`), re-evaluated on each change.
        self.composites = composites
        self.queue_urls = {q["name"]: q["url"] for q in queues.values()}
        self.capture = capture
        self.actions = actions
        self.store = store or MetricStore({}, [], capture)
        self.clock = clock
        #: Each alarm's state as CloudWatch holds it; a new alarm starts in INSUFFICIENT_DATA.
        self.states = dict.fromkeys(alarms, "INSUFFICIENT_DATA")
        #: When each alarm was last evaluated; the first evaluation catches up from the deployment.
        self.started = clock.now() if clock else 0.0
        self.evaluated_at: dict[str, float] = {}
        #: Every state change, metric and composite alarms alike: ``(name, new state, simulated time)``.
        self.transitions: list[tuple[str, str, float]] = []
        #: The period values of the evaluation running now (:meth:`_period_value_once`).
        self._periods: dict[tuple[str, float, float], float | None] = {}

    def transition(self, name: str, new: str, reason: str, at: float | None = None) -> list[Notice]:
        """Set ``name``'s state; on a change, store it in moto and execute the new state's actions."""
        old = self.states[name]
        if new == old:
            return []
        self.states[name] = new
        self.transitions.append((name, new, self._at(at)))
        cloudwatch = aws("cloudwatch")
        if not set_alarm_state(ACCOUNT, cloudwatch.meta.region_name, name, new, reason):
            cloudwatch.set_alarm_state(AlarmName=name, StateValue=new, StateReason=reason)
        notices = self.actions.execute(self.alarms[name], old, new, reason, at) if self.actions else []
        return notices + self.evaluate_composites(at)

    def evaluate_composites(self, at: float | None = None) -> list[Notice]:
        """Re-evaluate the composites on the children's states (CloudWatch does on each child's change) and
        execute the actions of each composite that changed state."""
        if self.composites is None:
            return []
        notices: list[Notice] = []
        for name, old, new, reason in self.composites.evaluate(self.states):
            self.transitions.append((name, new, self._at(at)))
            if self.actions:
                notices += self.actions.execute(self.composites.definitions[name], old, new, reason, at)
        return notices

    def _at(self, at: float | None) -> float:
        return at if at is not None else (self.clock.now() if self.clock else 0.0)

    def composite_states(self) -> dict[str, str]:
        """Each composite alarm's state ({} without composites)."""
        return dict(self.composites.states) if self.composites else {}

    def sqs_depth(self, alarm: Mapping[str, Any]) -> float | None:
        """ApproximateNumberOfMessagesVisible of the queue the alarm's dimension names (None: not ours)."""
        queue = next((d["Value"] for d in alarm.get("Dimensions", []) if d["Name"] == "QueueName"), None)
        if queue not in self.queue_urls:
            return None
        return self._depth(queue)

    def _depth(self, queue: str) -> float:
        """ApproximateNumberOfMessages of ``queue``: from moto here (:mod:`local_cloud.moto_state`), else the API."""
        sqs = aws("sqs")
        depth = queue_depth(ACCOUNT, sqs.meta.region_name, queue)
        if depth is None:
            attrs = sqs.get_queue_attributes(
                QueueUrl=self.queue_urls[queue], AttributeNames=["ApproximateNumberOfMessages"]
            )["Attributes"]
            depth = int(attrs["ApproximateNumberOfMessages"])
        return float(depth)

    def oldest_age(self, alarm: Mapping[str, Any], now: float) -> float | None:
        """ApproximateAgeOfOldestMessage of the alarm's queue: seconds since the oldest non-deleted
        message was sent (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-available-cloudwatch-metrics.html).
        Read from moto's in-process queue: SQS's API gives no message age (``patches.sqs_age_read``)."""
        from moto.sqs.models import sqs_backends

        from local_cloud.template import ACCOUNT, REGION

        name = next((d["Value"] for d in alarm.get("Dimensions", []) if d["Name"] == "QueueName"), None)
        queue = sqs_backends[ACCOUNT][REGION].queues.get(str(name))
        sent = [float(m.sent_timestamp or 0) for m in list(queue._messages)] if queue is not None else []
        return max(0.0, now - min(sent) / 1000.0) if sent else 0.0

    def _period_value(self, alarm: Mapping[str, Any], start: float, end: float) -> float | None:
        if "Metrics" not in alarm:
            key = metric_key(alarm["Namespace"], alarm["MetricName"], alarm.get("Dimensions", []))
            return statistic(self.store.window(key, start, end), alarm.get("Statistic", "Average"))
        values: dict[str, float | None] = {}
        previous: dict[str, float | None] = {}
        diff = any("DIFF(" in str(q.get("Expression", "")) for q in alarm["Metrics"])
        result: float | None = None
        for query in alarm["Metrics"]:
            if "MetricStat" in query:
                stat, metric = query["MetricStat"], query["MetricStat"]["Metric"]
                key = metric_key(metric["Namespace"], metric["MetricName"], metric.get("Dimensions", []))
                values[query["Id"]] = statistic(self.store.window(key, start, end), stat["Stat"])
                if diff:
                    previous[query["Id"]] = self._previous_value(key, stat["Stat"], start, end - start)
        for query in alarm["Metrics"]:
            if "Expression" in query:
                values[query["Id"]] = _expression(query["Expression"], values, previous)
            if query.get("ReturnData", True):
                result = values.get(query["Id"])
        return result

    def _previous_value(self, key: MetricKey, stat: str, start: float, period: float) -> float | None:
        """The statistic of the latest period before ``start`` that has a datapoint (None: none has)."""
        before = self.store.last_before(key, start)
        if before is None:
            return None
        back = math.floor((start - before) / period) + 1  # periods back, aligned on ``start``
        return statistic(self.store.window(key, start - back * period, start - (back - 1) * period), stat)

    def _state_at(self, name: str, alarm: Mapping[str, Any], at: float) -> tuple[str, str]:
        """(state, reason) of the alarm evaluated at ``at`` over its last evaluation periods."""
        period = float(alarm["Period"])
        n = int(alarm["EvaluationPeriods"])
        values = [self._period_value_once(name, alarm, at - (i + 1) * period, at - i * period) for i in range(n)]
        return self._state_of(name, alarm, values)

    def _period_value_once(self, name: str, alarm: Mapping[str, Any], start: float, end: float) -> float | None:
        """:meth:`_period_value`, computed once per evaluation: the boundaries an evaluation replays share
        their periods (each of ``EvaluationPeriods`` windows is read again at the next boundaries), and
        the metrics do not change while one evaluation runs (refreshed before it)."""
        key = (name, start, end)
        if key not in self._periods:
            self._periods[key] = self._period_value(alarm, start, end)
        return self._periods[key]

    def _state_of(self, name: str, alarm: Mapping[str, Any], values: list[float | None]) -> tuple[str, str]:
        """(state, reason) from the evaluation periods' values (newest first; None: missing)."""
        n = len(values)
        needed = min(n, int(alarm.get("DatapointsToAlarm") or n))
        treat = alarm.get("TreatMissingData", "missing")
        present = [v for v in values if v is not None]
        if not present and treat in ("missing", "ignore"):
            return (self.states[name] if treat == "ignore" else "INSUFFICIENT_DATA"), "no datapoints"
        breaching = sum(1 for v in present if _breaches(alarm, v))
        if treat == "breaching":
            breaching += len(values) - len(present)
        state = "ALARM" if breaching >= needed else "OK"
        shown = ", ".join("missing" if v is None else f"{v:g}" for v in values)
        return (
            state,
            f"{breaching} of {n} datapoints [{shown}] breach {alarm['ComparisonOperator']} {alarm['Threshold']}",
        )

    def _boundaries(self, name: str, period: float, now: float) -> list[float]:
        """The instants to evaluate at since the last call: every minute (CloudWatch evaluates each minute),
        and now. The window ending at each slides with it, whatever the period ("SlidingWindow - the
        default. The window advances each time the alarm is evaluated":
        https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-evaluation-window.html): a
        10-minute heartbeat lapses 10 minutes after its last datapoint, not at the next aligned boundary."""
        step = min(period, EVALUATION_INTERVAL)
        last = self.evaluated_at.get(name, self.started)
        first = math.floor(last / step) * step + step
        count = max(0, int((now - first) // step) + 1)
        skipped = max(0, count - MAX_CATCH_UP)  # a longer gap: its last MAX_CATCH_UP boundaries only
        steps = [first + i * step for i in range(skipped, count)]
        return [t for t in steps if t < now] + [now + 1e-6]  # now's own datapoints included

    def evaluate(self) -> list[str]:
        """Evaluate every alarm at each period boundary since the last call and now; the alarms in ALARM.

        CloudWatch's own reads and notifications are not the deployment's API calls: not counted."""
        with outside_the_pipeline():
            return self._evaluate()

    def adopt_set_states(self, now: float) -> None:
        """Apply ``SetAlarmState`` calls made since the last evaluation (an operator's, ``ops smoke``'s):
        CloudWatch runs the new state's actions at once; the next evaluation moves the alarm back to
        what its metrics say (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_SetAlarmState.html)."""
        for name, (new, reason) in self._alarm_states().items():
            old = self.states.get(name)
            if old is None or new == old:
                continue
            self.states[name] = new
            if self.actions:
                self.actions.execute(self.alarms[name], old, new, reason, now)

    def _alarm_states(self) -> dict[str, tuple[str, str]]:
        """Each alarm's state and reason in CloudWatch: moto's own records here (CloudWatch does not call
        DescribeAlarms on itself: :mod:`local_cloud.moto_state`), else DescribeAlarms."""
        client = aws("cloudwatch")
        states = alarm_states(ACCOUNT, client.meta.region_name, self.alarms)
        if states is not None:
            return states
        states = {}
        for page in client.get_paginator("describe_alarms").paginate(AlarmNames=list(self.alarms)[:100]):
            for alarm in page.get("MetricAlarms", []):
                states[alarm["AlarmName"]] = (alarm["StateValue"], alarm.get("StateReason", ""))
        return states

    def _sample_depths(self, now: float) -> dict[str, float]:
        """Each alarmed queue's ApproximateNumberOfMessagesVisible, sampled now and kept as a datapoint
        (SQS reports the gauge every minute; a metric-math alarm such as ``DIFF(depth)`` reads its history)."""
        queues = {
            d["Value"]
            for alarm in self.alarms.values()
            for metric in [alarm, *(q["MetricStat"]["Metric"] for q in alarm.get("Metrics", []) if "MetricStat" in q)]
            if (metric.get("Namespace"), metric.get("MetricName")) == DEPTH
            for d in metric.get("Dimensions", [])
            if d["Name"] == "QueueName" and d["Value"] in self.queue_urls
        }
        depths = {}
        for queue in sorted(queues):
            depths[queue] = self._depth(queue)
            self.store.add(metric_key(*DEPTH, {"QueueName": queue}), now, depths[queue])
        return depths

    def _replay(self, now: float) -> list[tuple[float, int, str]]:
        """Every alarm's evaluation instants since the last call, in time order across the alarms (then the
        template's order): CloudWatch evaluates each alarm every minute, so a composite reads its children as
        they were at each minute. Replayed one alarm after the other, a composite went ALARM, OK and ALARM again
        at the same minute when the next child's replay started over from it. Gauges are read now only."""
        instants: list[tuple[float, int, str]] = []
        for order, (name, alarm) in enumerate(self.alarms.items()):
            if (alarm.get("Namespace"), alarm.get("MetricName")) in (DEPTH, AGE):
                instants.append((now, order, name))
            else:
                instants.extend((at, order, name) for at in self._boundaries(name, float(alarm["Period"]), now))
        return sorted(instants)

    def _evaluate(self) -> list[str]:
        now = self.clock.now() if self.clock else 0.0
        self.adopt_set_states(now)
        self.evaluate_composites(now)  # created in INSUFFICIENT_DATA, "then evaluated" (PutCompositeAlarm)
        self.store.refresh()
        self._periods = {}
        depths = self._sample_depths(now)
        for at, _, name in self._replay(now):
            alarm = self.alarms[name]
            metric = (alarm.get("Namespace"), alarm.get("MetricName"))
            if metric in (DEPTH, AGE):
                # A gauge, sampled now: SQS reports the queue's current value each minute.
                queue = next((d["Value"] for d in alarm.get("Dimensions", []) if d["Name"] == "QueueName"), "")
                value = depths.get(queue) if metric == DEPTH else self.oldest_age(alarm, now)
                self.transition(name, *self._state_of(name, alarm, [value]), now)
            else:
                self.transition(name, *self._state_at(name, alarm, at), at)
        for name in self.alarms:
            self.evaluated_at[name] = now
        states = {**self.states, **self.composite_states()}
        return sorted(name for name, state in states.items() if state == "ALARM")

    def dlq_states(self, in_alarm: list[str], depths: dict[str, int]) -> dict[str, dict[str, Any]]:
        """Per DLQ (by name): its alarm, whether it is in ALARM, and its depth."""
        states = {}
        for alarm_name, alarm in self.alarms.items():
            queue = next((d["Value"] for d in alarm.get("Dimensions", []) if d["Name"] == "QueueName"), None)
            if queue in depths:
                states[queue] = {"alarm": alarm_name, "in_alarm": alarm_name in in_alarm, "depth": depths[queue]}
        return states
