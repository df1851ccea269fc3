"""``ops local up``: the pipeline served on 127.0.0.1, reached only through its endpoint URL."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from harness.stack.synth import synthesize_once, xdist_run_root
from harness.stack.up import LocalEndpoint, PortInUse, UpOptions, add_up_parser, serve
from harness.workload.orders import OrderMix, make_orders
from local_cloud.function_env import InvocationEnviron
from local_cloud.template import CloudAssembly
from ops.repair import RepairRefused, repair
from ops.target import Target

pytestmark = pytest.mark.e2e

TERMINAL = {"COMPLETED", "COMPENSATED", "NEEDS_ATTENTION"}
MIX = OrderMix(decline_rate=0.34, ship_fail_rate=0.0, out_of_stock_rate=0.0)


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> CloudAssembly:
    return synthesize_once(xdist_run_root(tmp_path_factory.getbasetemp()), "dev")


class Served:
    """``serve`` in a background thread, with its endpoint once ready."""

    def __init__(self, options: UpOptions) -> None:
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.info: LocalEndpoint | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._serve, args=(options,), name="local-up", daemon=True)

    def _serve(self, options: UpOptions) -> None:
        try:
            serve(options, stop=self.stop, on_ready=self._on_ready)
        except BaseException as exc:  # surfaced by the test thread
            self.error = exc
            self.ready.set()

    def _on_ready(self, info: LocalEndpoint) -> None:
        self.info = info
        self.ready.set()

    def client(self, service: str) -> Any:
        assert self.info is not None
        return boto3.client(
            service,
            endpoint_url=self.info.endpoint_url,
            region_name="us-east-1",
            aws_access_key_id="operator",
            aws_secret_access_key="operator",
        )


@pytest.fixture(scope="module")
def served(assembly: CloudAssembly) -> Iterator[Served]:
    environ = dict(os.environ)
    running = Served(UpOptions(port=0, assembly_dir=assembly.outdir, sweep_interval=2.0))
    running.thread.start()
    assert running.ready.wait(60), "local up did not become ready"
    if running.error is not None:
        raise running.error
    yield running
    running.stop.set()
    running.thread.join(timeout=15)
    assert not running.thread.is_alive(), "local up did not stop"
    assert running.error is None
    assert dict(os.environ) == environ  # endpoint, credentials and MOTO_PORT were this run's only
    # Its invocations' overlay, seen through by the per-test patch guard while the server ran, is gone.
    assert not isinstance(vars(os.environ)["_data"], InvocationEnviron)


def _statuses(served: Served, order_ids: list[str]) -> dict[str, str]:
    assert served.info is not None
    ddb = served.client("dynamodb")
    table = served.info.outputs["OrdersTableName"]
    found = {}
    for order_id in order_ids:
        item = ddb.get_item(TableName=table, Key={"order_id": {"S": order_id}}, ConsistentRead=True).get("Item")
        if item:
            found[order_id] = item["status"]["S"]
    return found


def test_local_up_start_sends_no_notification(served: Served) -> None:
    """The deploy and the alarms' first evaluation notify nobody (no OK actions: decision 0030)."""
    assert served.info is not None
    assert served.info.start_notifications == 0


def test_local_up_listens_on_loopback_and_registers_the_stack(served: Served) -> None:
    info = served.info
    assert info is not None
    assert info.endpoint_url.startswith("http://127.0.0.1:")
    target = Target.from_stack(info.stack, region="us-east-1", endpoint_url=info.endpoint_url)
    assert dict(target.outputs) == info.outputs
    assert {"OrdersQueueUrl", "OrdersTableName", "StateMachineArn"} <= set(info.outputs)


def test_local_up_processes_orders_sent_through_the_endpoint(served: Served) -> None:
    assert served.info is not None
    orders = make_orders(3, 21, MIX)
    entries = []
    for i, (order, cid) in enumerate(orders):
        entry: dict[str, Any] = {"Id": str(i), "MessageBody": json.dumps(order)}
        if cid:
            entry["MessageAttributes"] = {"correlation_id": {"DataType": "String", "StringValue": cid}}
        entries.append(entry)
    sent = served.client("sqs").send_message_batch(QueueUrl=served.info.outputs["OrdersQueueUrl"], Entries=entries)
    assert len(sent["Successful"]) == 3

    order_ids = [o["order_id"] for o, _ in orders]
    deadline = time.monotonic() + 40
    statuses: dict[str, str] = {}
    while time.monotonic() < deadline:
        statuses = _statuses(served, order_ids)
        if len(statuses) == 3 and set(statuses.values()) <= TERMINAL:
            break
        time.sleep(0.25)
    assert len(statuses) == 3 and set(statuses.values()) <= {"COMPLETED", "COMPENSATED"}, statuses

    executions = served.client("stepfunctions").list_executions(stateMachineArn=served.info.outputs["StateMachineArn"])
    assert sorted(e["status"] for e in executions["executions"]) == ["SUCCEEDED"] * 3


def test_local_up_repair_reaches_it_like_a_deployed_stack(served: Served) -> None:
    info = served.info
    assert info is not None
    target = Target.from_stack(info.stack, region="us-east-1", endpoint_url=info.endpoint_url)
    with pytest.raises(RepairRefused, match="cannot repair order order-nobody-placed: not in the orders table"):
        repair(target, "order-nobody-placed", "redrive")


def test_local_up_refuses_a_taken_port(assembly: CloudAssembly) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(PortInUse, match=f"127.0.0.1:{port} is in use"):
            serve(UpOptions(port=port, assembly_dir=assembly.outdir, duration=1.0))


def test_local_up_arguments() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    add_up_parser(parser.add_subparsers(dest="local_command"))
    args = parser.parse_args(["up"])
    assert (args.port, args.sweep_interval, args.duration, args.orders, args.assembly) == (4566, 60.0, None, 0, None)
    args = parser.parse_args(["up", "--port", "4600", "--assembly", "cdk.out", "--orders", "5", "--duration", "30"])
    assert (args.port, args.assembly, args.orders, args.duration) == (4600, Path("cdk.out"), 5, 30.0)
    with pytest.raises(SystemExit):
        parser.parse_args(["up", "--sweep-interval", "0"])
