"""``python -m harness drill`` (``make drill``): a scripted on-call drill on the local stack (issue 41, point 8).

Five incidents, one after another on the simulated clock (CloudWatch evaluating every minute, the sweeper on
its schedule), each answered with ``python -m ops`` commands only (:mod:`harness.drill.console`):

- a declined card: "what happened to order X" -> ``ops order``;
- a poison message: "why was I paged" -> the notification (alarm, runbook) and ``ops trace``; "is it safe to
  replay" -> ``ops dlq list`` and ``ops dlq replay --dry-run`` (permanent: no), then ``ops dlq discard`` (archived,
  deleted: the DLQ's alarms and OrdersAtRisk back to OK, silently);
- a payment provider outage (90 s, as ``make chaos``'s): the page and ``ops orders --status NEEDS_ATTENTION``;
- a stopped sweeper (no run for a heartbeat window): the page and ``ops orders --status stuck``;
- parked orders after an outage (carrier down, then the payment provider: refunds fail, orders parked): "what is
  stuck and what do I do" -> ``ops orders --status NEEDS_ATTENTION``, ``ops order``; repaired
  (``ops repair --action compensate``) and one resolved by hand (``ops resolve``).

Per incident: the notifications sent (page or ticket topic), the time to the first (simulated), the commands
and their AWS calls; the notifications raised while the operator acted. Then the read commands and a repair
again after more history: their AWS calls must not grow. ``--check`` (:func:`harness.drill.judge.judge`).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.drill.console import OpsConsole
from harness.drill.judge import CommandRun, Growth, IncidentRun, Notification, drill_table, judge, shape
from harness.run.incidents import HEALTHY, OUTAGE_ORDERS, OUTAGE_SECONDS, ProviderOutage
from harness.stack.pipeline import PipelineRun
from harness.workload.orders import OrderMix, make_orders

STACK = "OrderPipeline-dev"
#: Simulated time an incident is given to page: the longest alarm period (StuckOrders, 10 minutes) and a
#: sweep more (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html).
SETTLE_SECONDS = 900.0
#: Simulated time after the operator's commands in which what they set off would notify.
AFTER_OPERATOR_SECONDS = 600.0
#: The longest wait for every alarm to be back to OK between incidents (simulated).
SETTLE_LIMIT_SECONDS = 1800.0
#: Orders added between the two runs of each read command (the history grows by this much).
MORE_HISTORY = 40
#: The parked-orders incident: the carrier down for this long, the payment provider from a little later
#: (the charges went through, the shipments fail, their refunds fail: parked). Longer than the forward and
#: compensation retries (6 and 5 retries of 2 s doubling, capped at 30 s: stacks/order_constructs/order_saga.py).
LONG_OUTAGE_SECONDS = 600.0
PARK_ORDERS = 3
DECLINE = OrderMix(decline_rate=1.0, out_of_stock_rate=0.0, ship_fail_rate=0.0, missing_correlation_rate=0.0)
POISON_BODY = '{"order_id": "broken"}'


@dataclass(frozen=True)
class DrillOptions:
    seed: int = 41
    assembly_dir: Path | None = None
    check: bool = False
    json: bool = False


class Drill:
    """The drill on one local pipeline: incidents, the operator's commands, the records."""

    def __init__(self, run: PipelineRun, console: OpsConsole, outage: ProviderOutage, seed: int) -> None:
        self.run = run
        self.console = console
        self.outage = outage
        self.seed = seed
        outputs = run.deployment.outputs()
        self.severity = {outputs.get("AlarmTopicArn"): "page", outputs.get("TicketTopicArn"): "ticket"}
        self.growth: list[Growth] = []
        self.probes: list[tuple[str, ...]] = []
        self.kept: list[str] = []

    # -- notifications ----------------------------------------------------------------------------
    def _history(self) -> list[Any]:
        actions = self.run.alarm_evaluator.actions
        return list(actions.history) if actions else []

    def notifications(self, since: int) -> list[Notification]:
        deployed = self.run.deployment
        out = []
        for n in self._history()[since:]:
            # A composite alarm (OrdersAtRisk) is kept apart from the metric alarms; its description too.
            alarm = deployed.alarms.get(n.alarm) or deployed.composite_alarms.get(n.alarm, {})
            description = str(alarm.get("AlarmDescription", ""))
            runbook = next((w for w in description.split() if "runbooks/" in w), "")
            out.append(Notification(n.alarm, n.state, n.at, self.severity.get(n.topic, "other"), runbook))
        return out

    def mark(self) -> int:
        return len(self._history())

    def operate(
        self,
        incident: IncidentRun,
        commands: list[tuple[tuple[str, ...], str]],
        then: Callable[[IncidentRun], None] | None = None,
    ) -> None:
        """Type ``commands`` ((argv, question)), then what ``then`` decides on their output; then let time
        pass: what they set off notifies now."""
        mark = self.mark()
        for argv, question in commands:
            incident.commands.append(self.console.run(*argv, question=question))
        if then is not None:
            then(incident)
        self.run.drain()
        self.run.advance(AFTER_OPERATOR_SECONDS)
        incident.operator_notifications = self.notifications(mark)
        late = self.mark()
        self.settle(incident)
        incident.notifications += self.notifications(late)  # the incident's own, later (a reminder)

    def fix_parked(self, incident: IncidentRun, resolve: int = 0, keep: int = 0) -> None:
        """The parked-orders runbook (docs/runbooks/parked-orders.md) as commands: list the parked orders, look
        at the oldest, then per order ``repair --action redrive``, ``compensate`` when redrive is refused; the
        first ``resolve`` of them closed by hand instead. Typed now (the list decides what follows)."""
        listed = self.console.run("orders", "--status", "NEEDS_ATTENTION", "--json", question="what is stuck")
        incident.commands.append(listed)
        ids = [o["order_id"] for o in json.loads(listed.output or "[]")]
        if ids:
            incident.commands.append(self.console.run("order", ids[0], question="what happened to order X"))
            incident.commands.append(self.console.run("trace", ids[0], question="why was I paged"))
        reason = ("--reason", f"drill: {incident.name}, ticket DRILL-1")
        self.kept = ids[len(ids) - keep :] if keep else []
        for n, order_id in enumerate(ids[: len(ids) - keep]):
            if n < resolve:
                argv = ("resolve", order_id, "--outcome", "compensated", *reason)
                incident.commands.append(self.console.run(*argv, question="resolve"))
                continue
            incident.commands += self.repair(order_id, reason)

    def discard_permanent(self, incident: IncidentRun) -> None:
        """The runbook's exit for a poison message (docs/runbooks/orders-queue.md#discard-a-message), decided
        on the dry run's output as a person would: each message it refused as permanent is archived and
        discarded with ``ops dlq discard``; then ``ops dlq list`` again (the DLQ is empty)."""
        (dry_run,) = [c for c in incident.commands if c.argv[:2] == ("dlq", "replay") and "--dry-run" in c.argv]
        skipped = json.JSONDecoder().raw_decode(dry_run.output, dry_run.output.find("{"))[0].get("skipped", {})
        permanent = [m for m, why in skipped.items() if why.startswith("permanent")]
        reason = ("--reason", f"drill: {incident.name}, permanent (malformed), ticket DRILL-2")
        for message_id in permanent:
            argv = ("dlq", "discard", "--queue", "orders", "--message-id", message_id, *reason)
            incident.commands.append(self.console.run(*argv, question="not safe to replay: discard it"))
        incident.commands.append(self.console.run("dlq", "list", question="is the DLQ empty now"))
        incident.note = f"permanent (malformed), not replayed: {len(permanent)} archived and discarded"

    def repair(self, order_id: str, reason: tuple[str, ...]) -> list[CommandRun]:
        """``ops repair --action redrive``; ``compensate`` when redrive is refused (a compensation ran)."""
        redrive = self.console.run("repair", order_id, "--action", "redrive", *reason, question="repair")
        if redrive.exit_code != 2:
            return [redrive]
        return [redrive, self.console.run("repair", order_id, "--action", "compensate", *reason, question="repair")]

    def settle(self, incident: IncidentRun) -> None:
        """Let time pass until no alarm is in ALARM (at most :data:`SETTLE_LIMIT_SECONDS`): the next incident's
        notifications are its own. What stays in ALARM is noted."""
        waited = 0.0
        while (left := self.run.evaluate_alarms()) and waited < SETTLE_LIMIT_SECONDS:
            self.run.advance(60.0)
            waited += 60.0
        if left:
            short = ", ".join(a.split("-", 2)[-1] for a in left)
            incident.note = "; ".join(filter(None, [incident.note, f"still in ALARM after it: {short}"]))

    def _orders(self, count: int, mix: OrderMix, tag: str) -> list[tuple[dict[str, Any], str | None]]:
        made = make_orders(count, self.seed, mix)
        return [({**o, "order_id": f"drill-{tag}-{i}"}, f"cid-drill-{tag}-{i}") for i, (o, _) in enumerate(made)]

    # -- incidents --------------------------------------------------------------------------------
    def warm_up(self) -> IncidentRun:
        """Some history, and the stack's first minutes: notifications here are the start's (none expected)."""
        incident = IncidentRun("start (local stack up, 10 orders)", self.run.clock.now(), expect_none=True)
        mark = self.mark()
        self.run.submit(self._orders(10, HEALTHY, "warm"))
        self.run.drain()
        self.run.advance(SETTLE_SECONDS)
        incident.notifications = self.notifications(mark)
        self.operate(incident, [(("pager", "check"), "does a page reach a person")])
        return incident

    def declined_card(self) -> IncidentRun:
        incident = IncidentRun("declined card", self.run.clock.now(), expect_none=True)
        mark = self.mark()
        ((order, cid),) = self._orders(1, DECLINE, "declined")
        self.run.submit([(order, cid)])
        self.run.drain()
        self.run.advance(SETTLE_SECONDS)
        incident.notifications = self.notifications(mark)
        self.operate(incident, [(("order", order["order_id"]), "what happened to order X")])
        self.probes.append(("order", order["order_id"]))
        return incident

    def poison_message(self) -> IncidentRun:
        incident = IncidentRun("poison message", self.run.clock.now())
        mark = self.mark()
        self.run.submit_messages([(POISON_BODY, "cid-drill-poison")])
        self.run.drain()
        self.run.advance(SETTLE_SECONDS)
        incident.notifications = self.notifications(mark)
        self.run.ship_logs()
        dry_run = ("dlq", "replay", "--queue", "orders", "--category", "all", "--dry-run")
        looks = [
            (("trace", "cid-drill-poison"), "why was I paged"),
            (("dlq", "list"), "is it safe to replay"),
            (dry_run, "is it safe to replay"),
        ]
        self.operate(incident, looks, then=self.discard_permanent)
        self.probes += [("trace", "cid-drill-poison"), ("dlq", "list"), dry_run]
        return incident

    def provider_outage(self) -> IncidentRun:
        incident = IncidentRun(f"payment provider outage ({OUTAGE_SECONDS:g} s)", self.run.clock.now())
        mark, now = self.mark(), self.run.clock.now()
        self.outage.now = self.run.clock.now
        self.outage.windows.append(("payment", now, now + OUTAGE_SECONDS))
        self.run.submit(self._orders(OUTAGE_ORDERS, HEALTHY, "outage"))
        self.run.drain()
        self.run.advance(SETTLE_SECONDS)
        incident.notifications = self.notifications(mark)
        self.run.ship_logs()
        self.operate(incident, [], then=self.fix_parked)
        self.probes.append(("orders", "--status", "NEEDS_ATTENTION", "--json"))
        return incident

    def stopped_sweeper(self) -> IncidentRun:
        incident = IncidentRun("stopped sweeper", self.run.clock.now())
        mark, now = self.mark(), self.run.clock.now()
        heartbeat = next(
            float(a["Period"]) for a in self.run.deployment.alarms.values() if a.get("MetricName") == "SweeperRuns"
        )
        stopped = heartbeat + self.run.schedule("Sweeper").interval + 60.0
        self.run.pause_schedule("Sweeper", now, now + stopped)
        self.run.advance(stopped + 120.0)
        incident.notifications = self.notifications(mark)
        incident.note = (
            f"the schedule skipped its runs for {stopped:g} s, then resumed (re-enabling a rule is not an ops verb)"
        )
        self.operate(incident, [(("orders", "--status", "stuck"), "what is stuck and what do I do")])
        self.probes.append(("orders", "--status", "stuck"))
        return incident

    def parked_after_outage(self) -> IncidentRun:
        incident = IncidentRun("parked orders after an outage", self.run.clock.now())
        mark, now = self.mark(), self.run.clock.now()
        self.outage.now = self.run.clock.now
        self.outage.windows += [
            ("carrier", now, now + LONG_OUTAGE_SECONDS),
            ("payment", now + 1.0, now + LONG_OUTAGE_SECONDS),
        ]
        orders = self._orders(PARK_ORDERS, HEALTHY, "parked")
        self.run.submit(orders)
        self.run.drain()
        self.run.advance(SETTLE_SECONDS)
        incident.notifications = self.notifications(mark)
        self.operate(incident, [], then=lambda i: self.fix_parked(i, resolve=1, keep=1))
        return incident

    # -- the same commands at a larger history ----------------------------------------------------
    def history_size(self) -> int:
        return len(self.run.submitted)

    def grow_and_compare(self, incidents: list[IncidentRun]) -> None:
        """The read commands again, and the repair of the order kept parked, after :data:`MORE_HISTORY` orders
        more: their AWS calls at two history sizes (:attr:`growth`). Notifications meanwhile: the operator's."""
        small_history, small = self.history_size(), _calls_by_argv(incidents)
        last = incidents[-1]
        mark = self.mark()
        self.run.submit(self._orders(MORE_HISTORY, HEALTHY, "history"))
        self.run.drain()
        self.run.ship_logs()
        large_history = self.history_size()
        for argv in self.probes:
            large = self.console.run(*argv)
            self.growth.append(Growth(shape(argv), small_history, large_history, small[argv], large.calls))
        earlier = {c.argv[3]: c.calls for i in incidents for c in i.commands if c.argv[0] == "repair"}
        for order_id in self.kept:
            for run in self.repair(order_id, ("--reason", "drill: the kept order, after more history")):
                last.commands.append(run)
                action = run.argv[3]
                if action in earlier:
                    command = f"repair <order> --action {action}"
                    self.growth.append(Growth(command, small_history, large_history, earlier[action], run.calls))
        self.run.drain()
        self.run.advance(AFTER_OPERATOR_SECONDS)
        last.operator_notifications += self.notifications(mark)


def _calls_by_argv(incidents: list[IncidentRun]) -> dict[tuple[str, ...], int]:
    """Each command's calls at its last run before the history grew (``ops dlq list``: after the discard,
    the DLQ empty at both sizes)."""
    calls: dict[tuple[str, ...], int] = {}
    for i in incidents:
        for c in i.commands:
            calls[c.argv] = c.calls
    return calls


def run_drill(options: DrillOptions) -> dict[str, Any]:
    """The whole drill; its records (incidents, growth, failures)."""
    from harness.run.incidents import provider_outages
    from harness.stack.local_endpoint import subscribe_oncall
    from harness.stack.options import RunOptions
    from harness.stack.pipeline import local_pipeline
    from local_cloud.faults import FaultCounter
    from local_cloud.template import REGION

    counter = FaultCounter()
    run_options = RunOptions(orders=0, seed=options.seed, assembly_dir=options.assembly_dir)
    with provider_outages(("provider_outage",), counter) as outage, local_pipeline(run_options) as run:
        outputs = run.deployment.outputs()
        subscribe_oncall(outputs)
        drill = Drill(run, OpsConsole(outputs, REGION, STACK), outage, options.seed)
        incidents = [drill.warm_up(), drill.declined_card(), drill.poison_message()]
        incidents += [drill.provider_outage(), drill.stopped_sweeper(), drill.parked_after_outage()]
        drill.grow_and_compare(incidents)
        return {"incidents": incidents, "growth": drill.growth, "failures": judge(incidents, drill.growth)}


def _commands_text(incidents: list[IncidentRun]) -> list[str]:
    lines = []
    for i in incidents:
        lines.append(f"## {i.name}" + (f" ({i.note})" if i.note else ""))
        for n in i.notifications:
            lines.append(f"  notified: {n.severity} {n.alarm} {n.state}; runbook {n.runbook or '-'}")
        for c in i.commands:
            ops = ", ".join(f"{k} {v}" for k, v in sorted(c.operations.items()))
            lines.append(
                f"  $ python -m ops {c.text}   # {c.question or '-'}; exit {c.exit_code}; {c.calls} calls: {ops}"
            )
            lines += [f"    {line}" for line in c.output.strip().splitlines()[:12]]
    return lines


def add_drill_parser(commands: Any) -> None:
    drill = commands.add_parser("drill", help="a scripted on-call drill on the local stack, answered with ops commands")
    drill.add_argument("--seed", type=int, default=41)
    drill.add_argument("--assembly", type=Path, help="use this cdk.out instead of synthesizing")
    drill.add_argument(
        "--check",
        action="store_true",
        help="exit 1 on >1 notification per incident, one from an operator action, or calls that grow with history",
    )
    drill.add_argument("--json", action="store_true", help="print the records as JSON")


def main_drill(args: argparse.Namespace) -> int:
    options = DrillOptions(seed=args.seed, assembly_dir=args.assembly, check=args.check, json=args.json)
    result = run_drill(options)
    incidents, growth, failures = result["incidents"], result["growth"], result["failures"]
    if options.json:
        print(
            json.dumps(
                {
                    "incidents": [vars(i) | {"time_to_page": i.time_to_page} for i in incidents],
                    "growth": [vars(g) for g in growth],
                    "failures": failures,
                },
                default=lambda o: vars(o),
                indent=2,
            )
        )
    else:
        print("\n".join(_commands_text(incidents)))
        print(f"\ndrill {datetime.now(UTC):%Y-%m-%d}: python -m harness drill{' --check' if options.check else ''}\n")
        print("\n".join(drill_table(incidents, growth)))
        print("\n".join(f"FAIL: {f}" for f in failures) or "drill: every check passed")
    return 1 if options.check and failures else 0


__all__ = ["CommandRun", "Drill", "DrillOptions", "add_drill_parser", "main_drill", "run_drill"]
