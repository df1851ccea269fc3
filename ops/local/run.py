"""``ops local run``: synthesize, deploy the template into moto, push orders through, report.

Everything runs in this process against moto (``mock_aws``): no request leaves the machine.
"""

from __future__ import annotations

import json
import logging
import os
import random
import sys
import time
import types
import warnings
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from unittest import mock

import boto3
import botocore.endpoint
import botocore.exceptions

from ops.errors import OpsError
from ops.local.calls import CallCounter, count_aws_calls
from ops.local.capture import LineCapture, capture_stdout, point_powertools_loggers_at
from ops.local.chaos import DeliveryPlan, FaultRates, inject, plan_deliveries
from ops.local.clock import SimClock
from ops.local.costs import dollars_per_million_orders, per_order
from ops.local.deploy import LocalDeployment
from ops.local.event_sources import SqsPoller
from ops.local.faults import FaultCounter
from ops.local.hostile import HostileExecution, PiiFindings, line_sizes, side_effects_by_order
from ops.local.hostile import execution_name as hostile_execution_name
from ops.local.hostile import outcomes as hostile_outcomes
from ops.local.iam_enforce import enforce_iam
from ops.local.iam_reasons import explain
from ops.local.invariants import check
from ops.local.lambda_runtime import ensure_on_path
from ops.local.limits import Quotas
from ops.local.limits_enforce import LimitEnforcer, enforce_limits
from ops.local.moto_patches import (
    atomic_dynamodb,
    cached_asl_parse,
    cached_step_functions_clients,
    fast_backend_lookup,
    item_level_transaction_rollback,
)
from ops.local.orders import INITIAL_STOCK, PII_PATTERN, STOCKED_SKUS, OrderMix, make_orders
from ops.local.provider_server import serve_sandbox
from ops.local.report import TERMINAL, dlq_depths, ledger_summary, log_summary, metric_totals, order_statuses
from ops.local.simtime import simulated_now
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


#: The local run deploys stage dev with the HTTPS provider adapters (prod's code path), pointed at
#: the sandbox served over HTTP on 127.0.0.1 (ops/local/provider_server.py). The template carries
#: this placeholder origin; the deployment replaces it with the server's ephemeral port before
#: any function starts. The secrets are created in moto under these names (partial ARNs).
LOCAL_PROVIDER_ORIGIN = "http://127.0.0.1:9"
LOCAL_SECRETS = {"payment": "local/payment-api", "carrier": "local/carrier-api"}
LOCAL_PROVIDER_CONTEXT = {
    "payment_api_url": f"{LOCAL_PROVIDER_ORIGIN}/payment",
    "payment_api_secret_arn": f"arn:aws:secretsmanager:{REGION}:123456789012:secret:{LOCAL_SECRETS['payment']}",
    "carrier_api_url": f"{LOCAL_PROVIDER_ORIGIN}/carrier",
    "carrier_api_secret_arn": f"arn:aws:secretsmanager:{REGION}:123456789012:secret:{LOCAL_SECRETS['carrier']}",
}
#: The sandbox ledger, outside the template (it stands for the providers' own records).
LOCAL_LEDGER_TABLE = "local-sandbox-ledger"


@dataclass(frozen=True)
class RunOptions:
    orders: int = 20
    seed: int = 7
    mix: OrderMix = field(default_factory=OrderMix)
    stage: str = "dev"
    timeout_seconds: float = 300.0
    assembly_dir: Path | None = None  # reuse an existing cdk.out instead of synthesizing
    echo_logs: bool = False
    faults: FaultRates = field(default_factory=FaultRates)
    replay_transient: bool = False
    shard: int = 0  # this process runs the orders whose index % shards == shard
    shards: int = 1
    quotas: Quotas = field(default_factory=Quotas)  # AWS limits enforced in the run (ops.local.limits)
    lambda_concurrency_check: bool = True  # in-process in-flight invocations against Lambda concurrency


def synthesize(outdir: Path, stage: str, extra_context: dict[str, Any] | None = None) -> CloudAssembly:
    """Synthesize the CDK app (checks and cdk-nag included) into ``outdir``, with ``extra_context``."""
    from stacks.app_builder import STACK_NAME, build_app

    outdir.mkdir(parents=True, exist_ok=True)
    context = json.loads((REPO_ROOT / "cdk.json").read_text()).get("context", {})
    # The CLI sets asset metadata; without it the template carries no asset paths.
    context.update({"stage": stage, "aws:cdk:enable-asset-metadata": True})
    if stage != "dev":
        raise OpsError("the local run deploys stage dev (prod's providers are real APIs: see README)")
    context.update(LOCAL_PROVIDER_CONTEXT)
    context.update(extra_context or {})
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
        stack.enter_context(item_level_transaction_rollback())
        stack.enter_context(atomic_dynamodb())
        stack.enter_context(fast_backend_lookup())
        stack.enter_context(cached_step_functions_clients())
        stack.enter_context(cached_asl_parse())
        # Idempotency expiries and TTLs follow the simulated clock too.
        stack.enter_context(simulated_now(clock))
        # SQS visibility, DelaySeconds and timestamps too.
        stack.enter_context(sqs_on_clock(clock))
        yield


@contextmanager
def sqs_on_clock(clock: SimClock) -> Iterator[None]:
    """moto's SQS reads the simulated clock (visibility timeouts, DelaySeconds, sent timestamps)."""
    import moto.sqs.models as sqs_models

    with (
        mock.patch.object(sqs_models, "unix_time_millis", lambda *_: clock.now() * 1000.0),
        mock.patch.object(sqs_models, "unix_time", lambda *_: clock.now()),
    ):
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


_clients: dict[tuple[str, str | None], Any] = {}


def aws(service: str) -> Any:
    """One client per service (and endpoint) for the runner: creating clients is costly."""
    key = (service, os.environ.get("AWS_ENDPOINT_URL"))
    if key not in _clients:
        _clients[key] = boto3.client(service, region_name=REGION)
    return _clients[key]


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
        self.ledger_table = create_local_ledger()
        self.state_machine_arn = next(iter(self.deployment.state_machines.values()))
        self.submitted: list[tuple[dict[str, Any], str | None]] = []
        self._shipped = 0
        self.limits = LimitEnforcer(
            options.quotas, clock, self.deployment, concurrency=options.lambda_concurrency_check
        )

    def seed_inventory(self) -> None:
        ddb = aws("dynamodb")
        for sku in STOCKED_SKUS:
            ddb.put_item(
                TableName=self.inventory_table, Item={"pk": {"S": f"sku#{sku}"}, "available": {"N": str(INITIAL_STOCK)}}
            )

    def submit_messages(self, messages: list[tuple[str, str | None]]) -> None:
        """Send raw bodies (with optional correlation IDs) like a producer; retry what SQS refuses."""
        sqs = aws("sqs")
        queue_url = self.pollers[0].spec.queue_url
        for batch in _batches(messages):
            entries: dict[str, dict[str, Any]] = {}
            for i, (body, cid) in enumerate(batch):
                entry: dict[str, Any] = {"Id": str(i), "MessageBody": body}
                if cid:
                    entry["MessageAttributes"] = {"correlation_id": {"DataType": "String", "StringValue": cid}}
                entries[str(i)] = entry
            for _ in range(20):  # a producer keeps trying: throttling must not lose an order here
                try:
                    response = sqs.send_message_batch(QueueUrl=queue_url, Entries=list(entries.values()))
                except botocore.exceptions.ClientError:
                    continue
                for failed in response.get("Failed", []):
                    if failed.get("SenderFault"):
                        raise RuntimeError(f"SQS refused a message: {failed}")
                entries = {f["Id"]: entries[f["Id"]] for f in response.get("Failed", [])}
                if not entries:
                    break
            else:
                raise RuntimeError("could not submit messages after 20 attempts")

    def start_hostile_executions(self, executions: list[HostileExecution]) -> None:
        """Start the saga directly with references to orders the pipeline never accepted."""
        sfn = aws("stepfunctions")
        for hostile in executions:
            sfn.start_execution(
                stateMachineArn=self.state_machine_arn,
                name=hostile_execution_name(hostile.order_id, hostile.payment_attempt),
                input=json.dumps(hostile.saga_input()),
            )

    def order_summary(self) -> tuple[dict[str, int], list[dict[str, Any]]]:
        """Order counts by outcome, and each submitted order's status and correlation ID."""
        orders = order_statuses(self.orders_table)
        submitted_ids = list(dict.fromkeys(o["order_id"] for o, _ in self.submitted))
        statuses = Counter(orders.get(oid, {}).get("status", "NOT_ACCEPTED") for oid in submitted_ids)
        counts = {
            "submitted": len(submitted_ids),
            "completed": statuses.get("COMPLETED", 0),
            "compensated": statuses.get("COMPENSATED", 0),
            "needs_attention": statuses.get("NEEDS_ATTENTION", 0),
            "failed": statuses.get("NOT_ACCEPTED", 0),
            "in_flight": sum(n for s, n in statuses.items() if s not in TERMINAL and s != "NOT_ACCEPTED"),
        }
        details = [
            {
                "order_id": oid,
                "status": orders.get(oid, {}).get("status", "NOT_ACCEPTED"),
                "correlation_id": orders.get(oid, {}).get("correlation_id"),
            }
            for oid in submitted_ids
        ]
        return counts, details

    def submit(self, orders: list[tuple[dict[str, Any], str | None]]) -> None:
        """Send orders to the orders queue like a producer would (correlation ID as a message attribute)."""
        sqs = aws("sqs")
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

    def running_executions(self) -> bool:
        """Whether any execution is still running (one result is enough to know)."""
        response = aws("stepfunctions").list_executions(
            stateMachineArn=self.state_machine_arn, statusFilter="RUNNING", maxResults=1
        )
        return bool(response["executions"])

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
            # Only delayed messages remain (a throttled record requeued with DelaySeconds): SQS
            # reads the simulated clock (sqs_on_clock), so let a second of it pass.
            self.clock.advance(1.0)
        raise TimeoutError(f"pipeline did not settle within {self.options.timeout_seconds} s")

    def _sqs_depth(self, alarm: dict[str, Any]) -> float | None:
        by_name = {q["name"]: q["url"] for q in self.deployment.queues.values()}
        queue = next((d["Value"] for d in alarm["Dimensions"] if d["Name"] == "QueueName"), None)
        if queue not in by_name:
            return None
        attrs = aws("sqs").get_queue_attributes(
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
        cloudwatch = aws("cloudwatch")
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
        logs_client = aws("logs")
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
        counts, details = self.order_summary()
        orders = order_statuses(self.orders_table)
        sfn = aws("stepfunctions")
        executions = [
            e
            for p in sfn.get_paginator("list_executions").paginate(stateMachineArn=self.state_machine_arn)
            for e in p["executions"]
        ]
        logs, emf, _ = self.capture.records()
        return {
            "orders": counts,
            "order_details": details,
            "executions": dict(Counter(e["status"] for e in executions)),
            "ledger": ledger_summary(self.ledger_table, self.inventory_table, orders),
            "dlq": dlq_depths(self.deployment.queues, self.deployment.dlq_ids),
            "alarms_in_alarm": self.evaluate_alarms(),
            "logs": log_summary(logs),
            "metrics": metric_totals(emf),
            "event_sources": {p.spec.function.name: vars(p.stats) for p in self.pollers},
            "throttles": dict(self.limits.throttles),
            "iam": explain(self.deployment.iam.report()) if self.deployment.iam else {},
            "elapsed": {
                "wall_seconds": round(wall_seconds, 3),
                "simulated_seconds": round(self.clock.simulated_seconds, 3),
            },
        }


#: SQS refuses a batch whose messages add up to more than 256 KiB; stay well below it.
MAX_BATCH_BYTES = 200_000


def _batches(messages: list[tuple[str, str | None]]) -> Iterator[list[tuple[str, str | None]]]:
    """At most 10 messages per batch, and at most :data:`MAX_BATCH_BYTES` (a 100 KB message goes alone if needed)."""
    batch: list[tuple[str, str | None]] = []
    size = 0
    for body, cid in messages:
        n = len(body.encode("utf-8")) + len((cid or "").encode("utf-8"))
        if batch and (len(batch) == 10 or size + n > MAX_BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append((body, cid))
        size += n
    if batch:
        yield batch


def body_order_id(body: str) -> str | None:
    """The ``order_id`` a message body names, if it is a JSON object naming one (never raises)."""
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):  # hostile bodies: malformed, or nested beyond the recursion limit
        return None
    order_id = parsed.get("order_id") if isinstance(parsed, dict) else None
    return str(order_id) if order_id is not None else None


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
    with (
        capture_stdout(run.capture),
        run.deployment.lambda_routing(),
        handler_clock(run),
        enforce_limits(run.limits),  # inside IAM: AWS authorizes a call before it throttles it
        enforce_iam(run.deployment),
        serve_local_providers(run),
    ):
        point_powertools_loggers_at(run.capture)
        run.seed_inventory()
        yield run


def create_local_ledger() -> str:
    """The sandbox providers' ledger table in moto (pk/sk), outside the template."""
    ddb = aws("dynamodb")
    with suppress(ddb.exceptions.ResourceInUseException):
        ddb.create_table(
            TableName=LOCAL_LEDGER_TABLE,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
    return LOCAL_LEDGER_TABLE


@contextmanager
def serve_local_providers(run: PipelineRun) -> Iterator[None]:
    """Serve the sandbox on 127.0.0.1, store its API key in the secrets the template names, and
    point every function's provider URL at the server (replacing the template's placeholder)."""
    with serve_sandbox(run.ledger_table) as endpoints:
        secrets = aws("secretsmanager")
        for name in LOCAL_SECRETS.values():
            value = json.dumps({"api_key": endpoints.api_key})
            try:
                secrets.create_secret(Name=name, SecretString=value)
            except secrets.exceptions.ResourceExistsException:
                secrets.put_secret_value(SecretId=name, SecretString=value)
        origin = endpoints.payment_url.rsplit("/", 1)[0]
        for fn in run.deployment.functions.values():
            fn.env = {
                k: v.replace(LOCAL_PROVIDER_ORIGIN, origin) if isinstance(v, str) else v for k, v in fn.env.items()
            }
        yield


@contextmanager
def handler_clock(run: PipelineRun) -> Iterator[None]:
    """The handlers' wall clock (``order_domain.clock``: order stamps, the sweeper's cutoff) follows the run's clock."""
    for fn in run.deployment.functions.values():
        ensure_on_path(*fn.layer_dirs)
    import order_domain.clock

    with mock.patch.object(order_domain.clock, "now", run.clock.now):
        yield


@contextmanager
def local_pipeline(options: RunOptions, assembly: CloudAssembly | None = None) -> Iterator[PipelineRun]:
    """The deployed pipeline in moto, with Lambda routing and log capture on, stock seeded."""
    assembly = assembly or load_assembly(options)
    clock = SimClock()  # one clock for pollers, Lambda contexts and Step Functions retry waits
    with local_aws(clock), deployed_pipeline(assembly, options, clock) as run:
        yield run


def _dlq_contents(run: PipelineRun) -> tuple[dict[str, dict[str, int]], list[Any]]:
    """Every DLQ message of the stack (left in place), and counts by queue and category."""
    from ops.dlq import QUEUES, failures_table, lambda_dlq_module

    target = run.target()
    messages: list[Any] = []
    categories: dict[str, dict[str, int]] = {}
    for name, (_, dlq_output) in QUEUES.items():
        found = lambda_dlq_module().peek(target.client, target.output(dlq_output), failures_table(target))
        categories[name] = dict(Counter(m.category for m in found))
        messages.extend((name, m) for m in found)
    return categories, messages


def _alarm_states(run: PipelineRun, in_alarm: list[str], depths: dict[str, int]) -> dict[str, dict[str, Any]]:
    states = {}
    for alarm_name, alarm in run.deployment.alarms.items():
        queue = next((d["Value"] for d in alarm["Dimensions"] if d["Name"] == "QueueName"), None)
        if queue in depths:
            states[queue] = {"alarm": alarm_name, "in_alarm": alarm_name in in_alarm, "depth": depths[queue]}
    return states


def _state_transitions(run: PipelineRun, sample: int = 100) -> float:
    """Average state transitions per execution, from a sample of execution histories."""
    sfn = aws("stepfunctions")
    executions = sfn.list_executions(stateMachineArn=run.state_machine_arn, maxResults=sample)["executions"]
    if not executions:
        return 0.0
    total = 0
    for e in executions:
        events = sfn.get_execution_history(executionArn=e["executionArn"], maxResults=1000)["events"]
        total += sum(1 for ev in events if ev["type"].endswith("StateEntered"))
    return total / len(executions)


def run_local(options: RunOptions) -> dict[str, Any]:
    """Synthesize (unless given an assembly), push ``options.orders`` orders through with the
    configured faults, optionally replay transient DLQ messages, and return the report."""
    started = time.monotonic()
    counter = FaultCounter()
    orders = make_orders(options.orders, options.seed, options.mix)[options.shard :: options.shards]
    shard_seed = options.seed * 1000 + options.shard
    plan = plan_deliveries(orders, options.faults, random.Random(shard_seed + 1), counter)
    with local_pipeline(options) as run:
        run.submitted.extend(orders)
        with count_aws_calls() as calls, inject(options.faults, shard_seed + 2, run.clock, counter):
            run.submit_messages(plan.initial)
            run.start_hostile_executions(plan.hostile_executions)
            run.drain()
            if plan.late:  # late duplicates: after the first deliveries were processed
                run.submit_messages(plan.late)
                run.drain()
            run.sweep()
        report = run.report(time.monotonic() - started)
        report["faults_injected"] = dict(counter.injected)
        report["aws_calls"] = {
            "by_service": calls.by_service(),
            "by_operation": calls.operations(),
            "per_order": round(sum(calls.calls.values()) / max(1, len(orders)), 2),
            # The provider stand-in's own calls (its ledger): someone else's bill, not counted above.
            "provider_stand_in_excluded": sum(calls.outside.values()),
        }
        if options.replay_transient:
            report["replay"] = _replay_transient(run, report)
            report["orders"], report["order_details"] = run.order_summary()
        _finish_report(run, report, calls, started, plan)
        return report


def _replay_transient(run: PipelineRun, before: dict[str, Any]) -> dict[str, Any]:
    """Replay every transient DLQ message (faults over: the outage has passed), drain, compare."""
    from ops.dlq import replay_queue

    _, messages = _dlq_contents(run)
    transient = [m for _, m in messages if m.category == "transient"]
    replayed = replay_queue(
        run.target(), "orders", category="transient", dry_run=False, max_messages=None, rate=None, force=False
    )
    run.drain()
    after = run.report(0)
    statuses = {d["order_id"]: d["status"] for d in after["order_details"]}
    unprocessed = []
    for message in transient:
        order_id = body_order_id(message.body)
        if order_id and statuses.get(order_id) not in TERMINAL:
            unprocessed.append(order_id)
    keys = ("duplicate_charges", "duplicate_refunds", "duplicate_shipments")
    new_duplicates = {
        k: after["ledger"][k] - before["ledger"][k] for k in keys if after["ledger"][k] > before["ledger"][k]
    }
    return {
        "transient_in_dlq": len(transient),
        "replayed": len(replayed["replayed"]),
        "unprocessed": unprocessed,
        "new_duplicates": new_duplicates,
    }


def _pii_findings(run: PipelineRun, dlq_messages: list[Any]) -> dict[str, Any]:
    """Generated orders' tokens, names and address lines in captured log lines, in every
    execution's history, in DLQ message attributes (none may be anywhere)."""
    findings = PiiFindings()
    for line in run.capture.lines:
        findings.scan("log_lines", line, PII_PATTERN)
    sfn = aws("stepfunctions")
    histories = sfn.get_paginator("get_execution_history")
    for page in sfn.get_paginator("list_executions").paginate(stateMachineArn=run.state_machine_arn):
        for execution in page["executions"]:
            for history in histories.paginate(executionArn=execution["executionArn"]):
                for event in history["events"]:
                    findings.scan("execution_history_events", json.dumps(event, default=str), PII_PATTERN)
    for _, message in dlq_messages:
        findings.scan("dlq_message_attributes", json.dumps(message.attributes), PII_PATTERN)
    return findings.as_dict()


def _hostile_report(run: PipelineRun, plan: DeliveryPlan, dlq_messages: list[Any]) -> dict[str, Any]:
    """Where each hostile input ended (``hostile``) and the ones that ended elsewhere (``hostile_misplaced``)."""
    if not plan.hostile:
        return {"hostile": {}, "hostile_misplaced": []}
    from ops.local.report import scan_all

    unknown = {h.order_id for h in plan.hostile_executions}
    sfn = aws("stepfunctions")
    status = {}
    for hostile in plan.hostile_executions:
        name = hostile_execution_name(hostile.order_id, hostile.payment_attempt)
        arn = run.state_machine_arn.replace(":stateMachine:", ":execution:") + f":{name}"
        status[hostile.order_id] = sfn.describe_execution(executionArn=arn)["status"]
    effects = (
        side_effects_by_order(unknown, scan_all(run.ledger_table), scan_all(run.inventory_table)) if unknown else {}
    )
    accepted = set(order_statuses(run.orders_table))
    ended, misplaced = hostile_outcomes(plan.hostile, dlq_messages, accepted, status, effects)
    return {"hostile": ended, "hostile_misplaced": misplaced}


def _finish_report(
    run: PipelineRun, report: dict[str, Any], calls: CallCounter, started: float, plan: DeliveryPlan
) -> None:
    categories, messages = _dlq_contents(run)
    report["dlq_categories"] = categories
    # Distinct messages: a crash after dead-lettering can leave two copies of one (at-least-once).
    report["malformed_in_dlq_as_permanent"] = len(
        {
            m.correlation_id
            for _, m in messages
            if m.category == "permanent" and str(m.correlation_id).startswith("cid-malformed-")
        }
    )
    in_dlq = {body_order_id(m.body) for _, m in messages}
    report.update(_hostile_report(run, plan, messages))
    report["pii"] = _pii_findings(run, messages)
    report["logs"].update(line_sizes(run.capture.lines))
    lost = [
        d["order_id"] for d in report["order_details"] if d["status"] == "NOT_ACCEPTED" and d["order_id"] not in in_dlq
    ]
    report["orders"]["rejected"] = report["orders"]["failed"] - len(lost)
    report["orders"]["lost"] = len(lost)
    report["lost_orders"] = lost
    report["alarms_in_alarm"] = run.evaluate_alarms()
    report["dlq_alarm_states"] = _alarm_states(run, report["alarms_in_alarm"], report["dlq"])
    ledger = report["ledger"]
    report["side_effects"] = {
        k: ledger[k]
        for k in (
            "charges",
            "duplicate_charges",
            "duplicate_charge_requests",
            "shipments",
            "duplicate_shipments",
            "refunds",
            "duplicate_refunds",
            "refunds_without_charge",
            "reservations_outstanding",
        )
    }
    report["duplicates_suppressed"] = int(report["metrics"].get("DuplicatesSuppressed", 0))
    transitions = _state_transitions(run)
    lambda_invocations = sum(n for (service, _), n in calls.calls.items() if service == "lambda") + sum(
        p.stats.batches for p in run.pollers
    )
    units = per_order(
        calls.operations(),
        lambda_invocations,
        int(transitions * len(report["order_details"])),
        max(1, len(report["order_details"])),
    )
    report["cost"] = {
        "per_order": {k: round(v, 2) for k, v in vars(units).items()},
        "usd_per_million_orders": dollars_per_million_orders(units),
    }
    report["elapsed"] = {
        "wall_seconds": round(time.monotonic() - started, 3),
        "simulated_seconds": round(run.clock.simulated_seconds, 3),
    }
    report["invariants"] = check(report)
