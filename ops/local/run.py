"""``ops local run``: synthesize, deploy the template into moto, push orders through, report.

Everything runs in this process against moto (``mock_aws``): no request leaves the machine.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import types
import warnings
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from unittest import mock

import boto3
import botocore.endpoint

from ops.local.capture import LineCapture, capture_stdout, point_powertools_loggers_at
from ops.local.clock import SimClock
from ops.local.deploy import LocalDeployment
from ops.local.event_sources import SqsPoller
from ops.local.moto_patches import atomic_dynamodb
from ops.local.orders import INITIAL_STOCK, STOCKED_SKUS, OrderMix, make_orders
from ops.local.report import TERMINAL, dlq_depths, ledger_summary, log_summary, metric_totals, order_statuses
from ops.local.template import REGION, CloudAssembly
from ops.target import Target

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUTDIR = REPO_ROOT / ".build" / "local.out"
FAKE_ENV = {
    "AWS_ACCESS_KEY_ID": "local",
    "AWS_SECRET_ACCESS_KEY": "local",
    "AWS_SESSION_TOKEN": "local",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
    "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
}


@dataclass(frozen=True)
class RunOptions:
    orders: int = 20
    seed: int = 7
    mix: OrderMix = field(default_factory=OrderMix)
    stage: str = "dev"
    timeout_seconds: float = 300.0
    assembly_dir: Path | None = None  # reuse an existing cdk.out instead of synthesizing
    echo_logs: bool = False


def synthesize(outdir: Path, stage: str) -> CloudAssembly:
    """Synthesize the CDK app (checks and cdk-nag included) into ``outdir``."""
    from stacks.app_builder import STACK_NAME, build_app

    outdir.mkdir(parents=True, exist_ok=True)
    context = json.loads((REPO_ROOT / "cdk.json").read_text()).get("context", {})
    # The CLI sets asset metadata; without it the template carries no asset paths.
    context.update({"stage": stage, "aws:cdk:enable-asset-metadata": True})
    cloud_assembly = build_app(context=context, outdir=str(outdir)).synth()
    errors = [
        f"{message.id}: {message.entry.data}"
        for stack in cloud_assembly.stacks
        for message in stack.messages
        if str(message.level.value).lower() == "error"
    ]
    if errors:  # what `cdk synth` refuses, we refuse too (ResilienceChecks findings)
        raise RuntimeError("synth reported errors:\n" + "\n".join(errors))
    return CloudAssembly(outdir, f"{STACK_NAME}-{stage}")


@contextmanager
def moto_behaviour(clock: SimClock) -> Iterator[None]:
    """Our class-level patches on moto's backends: Step Functions retry waits take simulated time,
    DynamoDB item writes are atomic. They hold for ``mock_aws`` and for a moto server in this process.
    """
    from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl

    shim = types.SimpleNamespace(sleep=clock.advance, time=time.time, monotonic=time.monotonic)
    # moto logs every caught task failure at ERROR; those are the saga's expected business paths.
    logging.getLogger("moto").setLevel(logging.CRITICAL)
    with ExitStack() as stack:
        stack.enter_context(warnings.catch_warnings())
        warnings.filterwarnings("ignore", message="No application metrics to publish")
        stack.enter_context(mock.patch.object(retrier_decl, "time", shim))
        # botocore's own retry backoff (throttling) also waits in simulated time.
        stack.enter_context(mock.patch.object(botocore.endpoint, "time", shim))
        stack.enter_context(atomic_dynamodb())
        yield


@contextmanager
def local_aws(clock: SimClock) -> Iterator[None]:
    """moto in-process with Step Functions executing the real ASL; retry waits take simulated time."""
    from moto import mock_aws

    with ExitStack() as stack:
        stack.enter_context(mock.patch.dict(os.environ, FAKE_ENV))
        stack.enter_context(mock_aws(config={"stepfunctions": {"execute_state_machine": True}}))
        stack.enter_context(moto_behaviour(clock))
        yield


class PipelineRun:
    """One local run: deployment, pollers, the loop that drains them, and the report."""

    def __init__(self, assembly: CloudAssembly, options: RunOptions, clock: SimClock) -> None:
        self.options = options
        self.clock = clock
        self.capture = LineCapture(echo=sys.stderr if options.echo_logs else None)
        self.deployment = LocalDeployment(assembly, self.clock, self.capture).deploy()
        self.pollers = [SqsPoller(spec, self.clock) for spec in self.deployment.event_sources]
        self.orders_table = self.deployment.table("OrdersTable")
        self.inventory_table = self.deployment.table("InventoryTable")
        self.ledger_table = self.deployment.table("SandboxLedgerTable")
        self.state_machine_arn = next(iter(self.deployment.state_machines.values()))
        self.submitted: list[tuple[dict[str, Any], str | None]] = []
        self._shipped = 0

    def seed_inventory(self) -> None:
        ddb = boto3.client("dynamodb", region_name=REGION)
        for sku in STOCKED_SKUS:
            ddb.put_item(
                TableName=self.inventory_table, Item={"pk": {"S": f"sku#{sku}"}, "available": {"N": str(INITIAL_STOCK)}}
            )

    def submit(self, orders: list[tuple[dict[str, Any], str | None]]) -> None:
        """Send orders to the orders queue like a producer would (correlation ID as a message attribute)."""
        sqs = boto3.client("sqs", region_name=REGION)
        queue_url = self.pollers[0].spec.queue_url
        for start in range(0, len(orders), 10):
            entries = []
            for i, (order, cid) in enumerate(orders[start : start + 10]):
                entry: dict[str, Any] = {"Id": str(i), "MessageBody": json.dumps(order)}
                if cid:
                    entry["MessageAttributes"] = {"correlation_id": {"DataType": "String", "StringValue": cid}}
                entries.append(entry)
            sqs.send_message_batch(QueueUrl=queue_url, Entries=entries)
        self.submitted.extend(orders)

    def running_executions(self) -> int:
        sfn = boto3.client("stepfunctions", region_name=REGION)
        pages = sfn.get_paginator("list_executions").paginate(
            stateMachineArn=self.state_machine_arn, statusFilter="RUNNING"
        )
        return sum(len(p["executions"]) for p in pages)

    def deliver(self) -> int:
        """One turn of the event source mappings: a batch from each queue, or else the failed
        messages whose (simulated) visibility timeout has passed. Returns how many moved."""
        return sum(p.poll_once() for p in self.pollers) or sum(p.release_due() for p in self.pollers)

    def next_visible_at(self) -> float | None:
        """When the earliest failed message becomes visible again (simulated time), if any."""
        return min((t for p in self.pollers if (t := p.next_visible_at()) is not None), default=None)

    def drain(self) -> None:
        """Poll until queues are empty and no execution runs; advance simulated time when idle."""
        deadline = time.monotonic() + self.options.timeout_seconds
        while time.monotonic() < deadline:
            if self.deliver():
                continue
            if self.running_executions():
                time.sleep(0.25)
                continue
            upcoming = self.next_visible_at()
            if upcoming is not None:
                self.clock.advance(max(0.0, upcoming - self.clock.now()))
                continue
            if not any(p.queue_depth() for p in self.pollers):
                return
            time.sleep(0.02)
        raise TimeoutError(f"pipeline did not settle within {self.options.timeout_seconds} s")

    def _sqs_depth(self, alarm: dict[str, Any]) -> float | None:
        by_name = {q["name"]: q["url"] for q in self.deployment.queues.values()}
        queue = next((d["Value"] for d in alarm["Dimensions"] if d["Name"] == "QueueName"), None)
        if queue not in by_name:
            return None
        attrs = boto3.client("sqs", region_name=REGION).get_queue_attributes(
            QueueUrl=by_name[queue], AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        return float(attrs["ApproximateNumberOfMessages"])

    def _latest_emf(self, alarm: dict[str, Any]) -> float | None:
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

    def evaluate_alarms(self) -> list[str]:
        """Emulate CloudWatch's evaluation of the template's alarms; return the alarms in ALARM.

        SQS depth alarms read the queue; custom-metric alarms read the latest EMF datapoint the
        handlers printed. No datapoint = missing data = not breaching (as the alarms declare).
        """
        cloudwatch = boto3.client("cloudwatch", region_name=REGION)
        for name, alarm in self.deployment.alarms.items():
            if alarm["Namespace"] == "AWS/SQS" and alarm["MetricName"] == "ApproximateNumberOfMessagesVisible":
                value = self._sqs_depth(alarm)
            else:
                value = self._latest_emf(alarm)
            breaching = value is not None and (
                value > alarm["Threshold"]
                if alarm["ComparisonOperator"] == "GreaterThanThreshold"
                else value >= alarm["Threshold"]
            )
            cloudwatch.set_alarm_state(
                AlarmName=name,
                StateValue="ALARM" if breaching else "OK",
                StateReason=f"local evaluation: {alarm['MetricName']} = {value}",
            )
        alarms = cloudwatch.describe_alarms(StateValue="ALARM")["MetricAlarms"]
        return sorted(a["AlarmName"] for a in alarms)

    def run_schedules(self, only: str | None = None) -> list[str]:
        """Fire each scheduled rule's target once (sweeper, DLQ replay); returns the raw results.

        ``only``: fire just the targets whose logical ID starts with it (e.g. ``"Sweeper"``).
        """
        return [
            fn.invoke({"source": "aws.events", "detail-type": "Scheduled Event"})[0]
            for _, fn in self.deployment.schedules
            if only is None or fn.logical_id.startswith(only)
        ]

    def sweep(self) -> list[str]:
        """Run the stuck-order sweeper once; the IDs of the stuck orders it found."""
        results = [json.loads(r) for r in self.run_schedules(only="Sweeper")]
        return [order_id for r in results for order_id in r.get("stuck", [])]

    def ship_logs(self) -> int:
        """Copy captured handler log lines into moto CloudWatch Logs, into each function's log group.

        ``ops trace`` then reads them through CloudWatch Logs, as it does against AWS.
        """
        logs_client = boto3.client("logs", region_name=REGION)
        groups = {
            fn.env.get("POWERTOOLS_SERVICE_NAME"): self.deployment.log_group_of(fn)
            for fn in self.deployment.functions.values()
        }
        records = self.capture.records()[0][self._shipped :]
        self._shipped += len(records)
        batches: dict[str, list[dict[str, Any]]] = {}
        for record in records:
            group = groups.get(record.get("service"))
            if group:
                batches.setdefault(group, []).append(
                    {"timestamp": _log_millis(record.get("timestamp")), "message": json.dumps(record)}
                )
        stream = f"local-{int(time.time() * 1000)}"
        for group, events in batches.items():
            logs_client.create_log_stream(logGroupName=group, logStreamName=stream)
            events.sort(key=lambda e: e["timestamp"])
            for start in range(0, len(events), 5000):
                logs_client.put_log_events(
                    logGroupName=group, logStreamName=stream, logEvents=events[start : start + 5000]
                )
        return len(records)

    def target(self) -> Target:
        """The ops target for this deployment: the same commands as against a deployed stack."""
        return Target(self.deployment.outputs(), region=REGION)

    def report(self, wall_seconds: float) -> dict[str, Any]:
        orders = order_statuses(self.orders_table)
        submitted_ids = [o["order_id"] for o, _ in self.submitted]
        statuses = Counter(orders.get(oid, {}).get("status", "NOT_ACCEPTED") for oid in submitted_ids)
        sfn = boto3.client("stepfunctions", region_name=REGION)
        executions = [
            e
            for p in sfn.get_paginator("list_executions").paginate(stateMachineArn=self.state_machine_arn)
            for e in p["executions"]
        ]
        logs, emf, _ = self.capture.records()
        in_flight = sum(n for s, n in statuses.items() if s not in TERMINAL and s != "NOT_ACCEPTED")
        return {
            "orders": {
                "submitted": len(submitted_ids),
                "completed": statuses.get("COMPLETED", 0),
                "compensated": statuses.get("COMPENSATED", 0),
                "needs_attention": statuses.get("NEEDS_ATTENTION", 0),
                "failed": statuses.get("NOT_ACCEPTED", 0),
                "in_flight": in_flight,
            },
            "order_details": [
                {
                    "order_id": oid,
                    "status": orders.get(oid, {}).get("status", "NOT_ACCEPTED"),
                    "correlation_id": orders.get(oid, {}).get("correlation_id"),
                }
                for oid in submitted_ids
            ],
            "executions": dict(Counter(e["status"] for e in executions)),
            "ledger": ledger_summary(self.ledger_table, self.inventory_table, orders),
            "dlq": dlq_depths(self.deployment.queues, self.deployment.dlq_ids),
            "alarms_in_alarm": self.evaluate_alarms(),
            "logs": log_summary(logs),
            "metrics": metric_totals(emf),
            "event_sources": {p.spec.function.name: vars(p.stats) for p in self.pollers},
            "elapsed": {
                "wall_seconds": round(wall_seconds, 3),
                "simulated_seconds": round(self.clock.simulated_seconds, 3),
            },
        }


def _log_millis(stamp: Any) -> int:
    """Powertools' timestamp (``2026-11-21 05:40:26,747+0000``) in epoch milliseconds."""
    try:
        return int(datetime.strptime(str(stamp), "%Y-%m-%d %H:%M:%S,%f%z").timestamp() * 1000)
    except ValueError:
        return int(time.time() * 1000)


def load_assembly(options: RunOptions) -> CloudAssembly:
    with mock.patch.dict(os.environ, FAKE_ENV):
        if options.assembly_dir:
            return CloudAssembly(options.assembly_dir, f"OrderPipeline-{options.stage}")
        return synthesize(DEFAULT_OUTDIR, options.stage)


@contextmanager
def deployed_pipeline(assembly: CloudAssembly, options: RunOptions, clock: SimClock) -> Iterator[PipelineRun]:
    """Deploy into the moto that boto3 reaches now (``mock_aws``, or a server via ``AWS_ENDPOINT_URL``),
    with Lambda routing and log capture on, stock seeded. The caller provides that environment."""
    run = PipelineRun(assembly, options, clock)
    with capture_stdout(run.capture), run.deployment.lambda_routing():
        point_powertools_loggers_at(run.capture)
        run.seed_inventory()
        yield run


@contextmanager
def local_pipeline(options: RunOptions, assembly: CloudAssembly | None = None) -> Iterator[PipelineRun]:
    """The deployed pipeline in moto, with Lambda routing and log capture on, stock seeded."""
    assembly = assembly or load_assembly(options)
    clock = SimClock()  # one clock for pollers, Lambda contexts and Step Functions retry waits
    with local_aws(clock), deployed_pipeline(assembly, options, clock) as run:
        yield run


def run_local(options: RunOptions) -> dict[str, Any]:
    """Synthesize (unless given an assembly), run ``options.orders`` orders, return the report."""
    started = time.monotonic()
    with local_pipeline(options) as run:
        run.submit(make_orders(options.orders, options.seed, options.mix))
        run.drain()
        run.sweep()  # one sweep at the end: a healthy run finds no stuck order
        return run.report(time.monotonic() - started)
