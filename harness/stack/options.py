"""What one local run does: orders, seed, mix, faults, shards, quotas."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.faults.chaos import FaultRates
from harness.workload.orders import OrderMix
from local_cloud.limits import Quotas


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
    repair_parked: bool = False  # then redrive parked orders as the on-call's runbook says (harness.run.oncall)
    shard: int = 0  # this process runs the orders whose index % shards == shard
    shards: int = 1
    quotas: Quotas = field(default_factory=Quotas)  # AWS limits enforced in the run (local_cloud.limits)
    lambda_concurrency_check: bool = True  # in-process in-flight invocations against Lambda concurrency
    via: str = "sqs"  # how producers send orders: "sqs" (SendMessage) or "api" (POST /orders, SigV4)
    serve_api: bool = False  # serve the template's REST API on 127.0.0.1 even when producing via SQS
    api_port: int = 0  # its port (0: any free port)
    #: The scheduled rules' targets (logical ID prefixes) fired on the simulated clock per their rule's
    #: ScheduleExpression while the run drains or lets time pass (local_cloud.schedules); () fires none.
    scheduled_targets: tuple[str, ...] = ("Sweeper",)
    #: Incident families injected after the first drain (harness.run.incidents; a family twice: two incidents).
    incidents: tuple[str, ...] = ()
