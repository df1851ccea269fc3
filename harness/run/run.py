"""``ops local run``: synthesize, deploy the template into moto, push orders through, report.

Everything runs in this process against moto (``mock_aws``): no request leaves the machine. The
roles live in their own modules (see the README's module map); this one runs them in order.
"""

from __future__ import annotations

import random
import time
from dataclasses import replace
from typing import Any

from harness.faults.chaos import SAGA_FAULTS, inject, plan_deliveries
from harness.matrix.fault_matrix import SWEEP_MARGIN_SECONDS, deployed_definition, sweeper_threshold
from harness.reporting.notifications import notifications_at_start
from harness.reporting.report import TERMINAL
from harness.reporting.reporter import body_order_id, dlq_contents, finish_report
from harness.run.incidents import Incident, IncidentRunner, provider_outages
from harness.run.oncall import repair_parked_as_operator
from harness.stack.options import RunOptions
from harness.stack.pipeline import (
    LOCAL_LEDGER_TABLE,
    PipelineRun,
    create_local_ledger,
    deployed_pipeline,
    local_pipeline,
    serve_local_providers,
)
from harness.stack.synth import (
    DEFAULT_OUTDIR,
    LOCAL_PROVIDER_CONTEXT,
    LOCAL_PROVIDER_ORIGIN,
    LOCAL_SECRETS,
    REPO_ROOT,
    load_assembly,
    synthesize,
)
from harness.workload.orders import make_orders
from harness.workload.producer import MAX_BATCH_BYTES, _batches
from local_cloud.calls import count_aws_calls
from local_cloud.clients import aws
from local_cloud.environment import FAKE_ENV, local_aws, moto_behaviour, sqs_on_clock
from local_cloud.faults import FaultCounter

#: Kept for callers of the former single module (other branches, tools): prefer the role modules.
_dlq_contents = dlq_contents

__all__ = [
    "DEFAULT_OUTDIR",
    "FAKE_ENV",
    "LOCAL_LEDGER_TABLE",
    "LOCAL_PROVIDER_CONTEXT",
    "LOCAL_PROVIDER_ORIGIN",
    "LOCAL_SECRETS",
    "MAX_BATCH_BYTES",
    "REPO_ROOT",
    "PipelineRun",
    "RunOptions",
    "_batches",
    "_dlq_contents",
    "aws",
    "body_order_id",
    "create_local_ledger",
    "deployed_pipeline",
    "load_assembly",
    "local_aws",
    "local_pipeline",
    "moto_behaviour",
    "run_local",
    "serve_local_providers",
    "sqs_on_clock",
    "synthesize",
]


def run_local(options: RunOptions) -> dict[str, Any]:
    """Synthesize (unless given an assembly), push ``options.orders`` orders through with the
    configured faults, optionally replay transient DLQ messages, and return the report."""
    started = time.monotonic()
    counter = FaultCounter()
    orders = make_orders(options.orders, options.seed, options.mix)[options.shard :: options.shards]
    shard_seed = options.seed * 1000 + options.shard
    plan = plan_deliveries(orders, options.faults, random.Random(shard_seed + 1), counter)
    if "api_5xx" in options.incidents:
        options = replace(options, serve_api=True)  # the front door the api_5xx incident fails
    with provider_outages(options.incidents, counter) as outage, local_pipeline(options) as run:
        deployed = time.monotonic()
        run.submitted.extend(orders)
        definition = deployed_definition(run) if any(getattr(options.faults, k) for k in SAGA_FAULTS) else None
        counter.clock = run.clock.now
        incidents: list[Incident] = []
        at_start = notifications_at_start(run)
        with count_aws_calls() as calls, inject(options.faults, shard_seed + 2, run.clock, counter, definition):
            counter.happened_at(run.clock.now())  # the planned extras are sent now
            run.submit_messages(plan.initial)
            run.start_hostile_executions(plan.hostile_executions)
            run.drain()
            if plan.late:  # late duplicates: after the first deliveries were processed
                run.submit_messages(plan.late)
                run.drain()
            span = sweeper_threshold(run) + SWEEP_MARGIN_SECONDS
            if options.incidents:  # at random times within a span as long as the sweeper's threshold
                incidents = IncidentRunner(run, counter, outage, shard_seed + 3).span(span, options.incidents)
            if definition is not None or options.incidents:
                # Saga faults (a stop) can leave an order for the sweeper (an incident's orders too): its
                # schedule comes round once the order is past its threshold, so let that much time pass first.
                run.advance(span)
            run.sweep()
            if definition is not None:
                run.drain()  # what the sweeper started or sent
        drained = time.monotonic()
        report = run.report(drained - started)
        report["faults_injected"] = dict(counter.injected)
        report["faults_first_at"] = dict(counter.first_at)
        report["incidents"] = [i.as_report() for i in incidents]
        report.update(notifications_at_start=at_start, ops_commands=[])
        report["aws_calls"] = {
            "by_service": calls.by_service(),
            "by_operation": calls.operations(),
            "per_order": round(sum(calls.calls.values()) / max(1, len(orders)), 2),
            # The provider stand-in's own calls (its ledger): someone else's bill, not counted above.
            "provider_stand_in_excluded": sum(calls.outside.values()),
        }
        _operator_phases(run, report, options)
        finish_report(run, report, calls, started, plan)
        if run.producer.api is not None:  # what the order API answered the producer (counts only)
            report["front_door"] = {"via": "api", **run.producer.api.summary()}
        report["elapsed"]["phase_seconds"] = {
            "synth_and_deploy": round(deployed - started, 1),
            "pipeline": round(drained - deployed, 1),
            "report_and_replay": round(time.monotonic() - drained, 1),
        }
        return report


def _operator_phases(run: PipelineRun, report: dict[str, Any], options: RunOptions) -> None:
    """What the operator does once the run's faults are over: replay transient DLQ messages, redrive parked orders."""
    if options.replay_transient:
        report["replay"] = replay_as_operator(run, report)
        report["orders"], report["order_details"] = run.order_summary()
    if options.repair_parked:
        report["oncall"] = repair_parked_as_operator(run, report)
        report["orders"], report["order_details"] = run.order_summary()


def replay_as_operator(run: PipelineRun, report: dict[str, Any]) -> dict[str, Any]:
    """:func:`replay_transient`, recorded in ``report["ops_commands"]`` with its simulated span: a notification
    within it (or at the next evaluation) was caused by an ops command (:mod:`harness.reporting.notifications`)."""
    started = run.clock.now()
    replay = replay_transient(run, report)
    run.evaluate_alarms()  # what the replay did is read at the next evaluation
    report["ops_commands"].append({"command": "dlq replay", "started_at": started, "ended_at": run.clock.now()})
    return replay


def replay_transient(run: PipelineRun, before: dict[str, Any]) -> dict[str, Any]:
    """Replay every transient DLQ message (faults over: the outage has passed), drain, compare."""
    from ops.dlq import replay_queue

    _, messages = dlq_contents(run)
    transient = [m for _, m in messages if m.category == "transient"]
    replayed = replay_queue(
        run.target(),
        "orders",
        category="transient",
        dry_run=False,
        max_messages=None,
        rate=None,
        force=False,
    )  # the run's target short-polls: moto is one server
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
