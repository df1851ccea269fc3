"""``ops local faults``: every fault at every Task state, in one local deployment, judged from the records.

Each cell is one order (its own order ID, so the injection in :mod:`harness.faults.inject` is keyed
by it). The run: deploy, submit every cell's order, drain; run the repair cells' ``ops repair``;
drain; advance simulated time past the sweeper's threshold, sweep, drain; evaluate the alarms; then
classify each order from the orders table, the inventory reservations, the sandbox ledger and the
needs-attention queue (:func:`harness.faults.cells.classify`), never from what the code meant.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import order_domain.env as env_names
from harness.faults.cells import Cell, OrderFacts, classify, facts_from_records, render
from harness.faults.inject import FaultPlan, inject_plan
from harness.matrix.actors import Actors
from harness.matrix.phases import after_drain, race_actors, race_repair
from harness.matrix.races import all_cells
from harness.reporting.lost_sales import lost_sales_line, run_lost_sales
from harness.reporting.report import order_statuses
from harness.stack.options import RunOptions
from harness.stack.pipeline import PipelineRun, local_pipeline
from harness.workload.orders import make_order
from local_cloud.clients import aws
from local_cloud.tables import scan_all
from ops.errors import OpsError

#: Seconds past the sweeper's threshold the clock moves before the sweep.
SWEEP_MARGIN_SECONDS = 120


@dataclass(frozen=True)
class MatrixOptions:
    state: str | None = None  # only cells of this row (a Task state, or repair@<setup>)
    fault: str | None = None  # only cells whose fault contains this text
    persistence: str | None = None
    seed: int = 19
    timeout_seconds: float = 1500.0
    limit: int | None = None  # at most this many cells (the first ones after filtering)
    assembly_dir: Path | None = None  # reuse a synthesized cdk.out (tests); default: synthesize


def select(cells: list[Cell], options: MatrixOptions) -> list[Cell]:
    out = [
        c
        for c in cells
        if (options.state is None or c.row == options.state or c.row.startswith(f"repair@{options.state}"))
        and (options.fault is None or options.fault in c.fault)
        and (options.persistence is None or c.persistence == options.persistence)
    ]
    return out[: options.limit] if options.limit else out


def deployed_definition(run: PipelineRun) -> dict[str, Any]:
    """The state machine definition the local deployment runs (as moto holds it)."""
    described = aws("stepfunctions").describe_state_machine(stateMachineArn=run.state_machine_arn)
    return dict(json.loads(described["definition"]))


def run_matrix(options: MatrixOptions, cells_filter: Any = None) -> dict[str, Any]:
    """Run the selected cells; returns ``{"cells": [...], "totals": {...}, "violations": n, ...}``."""
    started = time.monotonic()
    run_options = RunOptions(
        orders=0,
        seed=options.seed,
        timeout_seconds=options.timeout_seconds,
        assembly_dir=options.assembly_dir,
        scheduled_targets=(),  # the matrix runs the sweeper itself, once its cells are past the threshold
    )
    with local_pipeline(run_options) as run:
        deployed = time.monotonic()
        definition = deployed_definition(run)
        cells = select(all_cells(definition), options)
        if cells_filter is not None:
            cells = [c for c in cells if cells_filter(c)]
        rng = random.Random(options.seed)
        plan = FaultPlan()
        threshold = sweeper_threshold(run)
        actors = race_actors(run, threshold + SWEEP_MARGIN_SECONDS)
        plan.actors = actors
        orders: list[tuple[dict[str, Any], str | None]] = []
        by_order: dict[str, Cell] = {}
        for index, cell in enumerate(cells):
            order = make_order(f"order-fm{options.seed}-{index:05d}", rng)
            orders.append((order, f"cid-fm-{index:05d}"))
            by_order[order["order_id"]] = cell
            plan.add(order["order_id"], list(cell.rules))
            actors.orders[order["order_id"]] = orders[-1]
        repairs: dict[str, dict[str, Any]] = {}
        with inject_plan(plan):
            run.submit(orders)
            run.drain()
            after_drain(run, actors, by_order)
            repairs = run_repairs(run, by_order, actors)
            run.drain()
            run.clock.advance(threshold + SWEEP_MARGIN_SECONDS)
            run.sweep()
            run.drain()
        in_alarm = run.evaluate_alarms()
        facts = order_facts(run, list(by_order), in_alarm)
        results = []
        for order_id, cell in by_order.items():
            results.append(_cell_result(cell, order_id, facts[order_id], repairs.get(order_id), actors))
        totals = Counter(r["outcome"] for r in results)
        return {
            "cells": results,
            "cell_count": len(results),
            "totals": dict(totals),
            "violations": totals.get("VIOLATION", 0),
            "lost_sales": run_lost_sales(run, in_alarm),
            "faults_injected": dict(plan.counter.injected),
            "seconds": {
                "deploy": round(deployed - started, 1),
                "total": round(time.monotonic() - started, 1),
            },
        }


def _cell_result(
    cell: Cell, order_id: str, facts: OrderFacts, repair: dict[str, Any] | None, actors: Actors
) -> dict[str, Any]:
    """One cell's row of the matrix: its order judged from the records (and the repair and races, if any)."""
    outcome, problems = judge(facts, repair, raced=bool(cell.race or cell.after_drain))
    row = cell.row
    if repair is not None and not (cell.race or cell.after_drain):
        # the row names the status the repair found, and how it got there
        row = f"repair@{repair['status_before']} ({cell.setup})"
    result: dict[str, Any] = {
        "cell": cell.key,
        "row": row,
        "fault": cell.fault,
        "persistence": cell.persistence,
        "order_id": order_id,
        "outcome": outcome,
        "problems": problems,
        "status": facts.status,
    }
    if repair is not None:
        result["repair"] = repair
    if order_id in actors.notes:
        result["races"] = actors.notes[order_id]
    return result


def run_repairs(run: PipelineRun, by_order: dict[str, Cell], actors: Actors | None = None) -> dict[str, dict[str, Any]]:
    """``ops repair`` (ops/repair.py's function, as the CLI calls it) for each repair cell's order.

    A refusal (the tool raises: the CLI prints one line and exits 2; or answers ``refused``) is
    recorded with whether the order was left as it was (status, ledger and reservations unchanged).
    Anything else is judged, like every cell, by how the order ends.
    """
    from ops.repair import repair

    target = run.target()
    out: dict[str, dict[str, Any]] = {}
    for order_id, cell in by_order.items():
        if not cell.repair:
            continue
        before = snapshot(run, order_id)
        try:
            if cell.race and actors is not None:
                answer = race_repair(run, actors, cell, order_id)
            else:
                answer = repair(target, order_id, cell.repair)  # type: ignore[arg-type]
            result, said = str(answer.get("result")), ""
        except (OpsError, SystemExit) as exc:  # a refusal: the CLI prints it as one line and exits 2
            result, said = "refused", f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # anything else is the tool failing: a violation, with what it said
            result, said = "error", f"{type(exc).__name__}: {exc}"
        entry: dict[str, Any] = {"action": cell.repair, "status_before": before.status, "result": result}
        if result in ("refused", "error"):
            entry.update(said=said, left_as_it_was=snapshot(run, order_id) == before)
        out[order_id] = entry
    return out


def snapshot(run: PipelineRun, order_id: str) -> OrderFacts:
    """The order's status, side effects and reservations now."""
    return facts_from_records(
        [order_id], order_statuses(run.orders_table), scan_all(run.ledger_table), scan_all(run.inventory_table)
    )[order_id]


def judge(facts: OrderFacts, repair: dict[str, Any] | None, *, raced: bool = False) -> tuple[str, list[str]]:
    """The cell's outcome: a refused repair that left the order as it was is ``REFUSED`` (fine);
    a refusal that changed it is a violation; otherwise :func:`classify`. ``raced``: another actor
    moved the order meanwhile (a race or time cell), so a refusal is judged by how the order ended."""
    if repair and repair.get("result") == "error":
        return "VIOLATION", [f"repair failed: {repair.get('said')}"]
    if repair and repair.get("result") == "refused" and not raced:
        if repair.get("left_as_it_was"):
            return "REFUSED", []
        return "VIOLATION", [f"repair refused ({repair.get('said')}) but the order changed"]
    return classify(facts)


def sweeper_threshold(run: PipelineRun) -> float:
    """The sweeper's STUCK_AFTER_SECONDS from its deployed environment (default 1,800 s)."""
    for fn in run.deployment.functions.values():
        if fn.logical_id.startswith("Sweeper"):
            return float(fn.env.get(env_names.STUCK_AFTER_SECONDS, 1800))
    return 1800.0


def needs_attention_queue(run: PipelineRun) -> dict[str, str] | None:
    for lid, queue in run.deployment.queues.items():
        if lid.startswith("NeedsAttentionQueue") and "Dlq" not in lid:
            return dict(queue)
    return None


def attention_messages(queue_url: str) -> Counter[str]:
    """Messages per order ID on the needs-attention queue (read after the alarms were evaluated)."""
    sqs = aws("sqs")
    counts: Counter[str] = Counter()
    seen: set[str] = set()
    while True:
        batch = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, VisibilityTimeout=3600).get(
            "Messages", []
        )
        if not batch:
            return counts
        for message in batch:
            if message["MessageId"] in seen:
                continue
            seen.add(message["MessageId"])
            try:
                body = json.loads(message["Body"])
            except ValueError:
                continue
            order_id = body.get("order_id") if isinstance(body, dict) else None
            if isinstance(order_id, str):
                counts[order_id] += 1


def execution_statuses(run: PipelineRun, order_ids: list[str]) -> dict[str, Counter[str]]:
    """Per order ID, its executions' statuses (names ``order-<id>-attempt-<N>[-...]``)."""
    from ops.repair import EXECUTION_PREFIX

    out: dict[str, Counter[str]] = defaultdict(Counter)
    wanted = set(order_ids)
    paginator = aws("stepfunctions").get_paginator("list_executions")
    for page in paginator.paginate(stateMachineArn=run.state_machine_arn):
        for execution in page["executions"]:
            order_id = str(execution["name"]).removeprefix(EXECUTION_PREFIX).split("-attempt-")[0]
            if order_id in wanted:
                out[order_id][execution["status"]] += 1
    return out


def order_facts(run: PipelineRun, order_ids: list[str], in_alarm: list[str]) -> dict[str, OrderFacts]:
    """What the records say of each order (see :class:`OrderFacts`)."""
    facts = facts_from_records(
        order_ids, order_statuses(run.orders_table), scan_all(run.ledger_table), scan_all(run.inventory_table)
    )
    queue = needs_attention_queue(run)
    if queue is not None:
        alarm_on = any(
            name in in_alarm
            for name, alarm in run.deployment.alarms.items()
            if any(d["Name"] == "QueueName" and d["Value"] == queue["name"] for d in alarm.get("Dimensions", []))
        )
        for oid, n in attention_messages(queue["url"]).items():
            if oid in facts:
                facts[oid].attention_messages = n
        for f in facts.values():
            f.attention_alarm = alarm_on
    for oid, counts in execution_statuses(run, order_ids).items():
        if oid in facts:
            facts[oid].executions = dict(counts)
    return facts


def main(options: MatrixOptions, as_json: bool) -> int:
    """Run, print (the matrix, or JSON), and return the exit code (1 on any violation)."""
    report = run_matrix(options)
    if as_json:
        print(json.dumps(report, indent=2, default=str))
    else:
        print(render(report["cells"]))
        print(lost_sales_line(report["lost_sales"]))
        print(f"({report['seconds']['total']} s, deploy {report['seconds']['deploy']} s)")
    # A lost sale nobody was paged for is a violation too (no_lost_sale_unless_paged, issue 40).
    return 1 if report["violations"] or report["lost_sales"]["unpaged"] else 0
