"""``python -m harness capacity`` (``ops capacity`` forwards to it): which AWS quota binds first at an
offered rate, read from the synthesized template.

A fluid model (the same one ``ops local spike`` runs, without the per-message detail): orders
arrive at ``rate`` for ``minutes``, intake serves at most ``mu`` orders a second, the smallest of
the StartExecution refill and the event source mapping's throughput (MaximumConcurrency, the
mapping's 1,000, reserved and account concurrency; ``batch_size`` records per batch, one batch a
second per concurrent batch); the StartExecution bucket absorbs the first ``bucket`` orders. The
queue backlog at the end of the peak is ``(rate - mu) * seconds - bucket`` and drains at
``mu - baseline``; with the throttle requeue, the queue is empty once the last requeued record's
delay has run out (the largest of the last delays, close to the cap). State transitions beyond
their refill slow executions down (Standard workflows delay them), which adds latency, not
backlog in the queue: executions then end at most
``refill / states_per_order`` a second, and the last order is terminal once that throughput has
worked through every order of the peak (``predicted_terminal_after_seconds``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import order_domain.env as env_names
from harness.reporting.costs import PerOrder, dollars_per_million_orders
from local_cloud.limits import Quotas
from local_cloud.template import CloudAssembly
from stacks.order_constructs.throttle import (
    BATCH_SECONDS,
    api_throttle,
    intake_concurrency,
    queue_ceilings,
    queue_service,
)

#: Intake's largest requeue delay for a throttled record (lambda_resilience.backoff, ThrottleBackoff.max_seconds).
REQUEUE_MAX_SECONDS = 60


def _joined(value: Any) -> str:
    """A ``DefinitionString`` (a string or an ``Fn::Join``) with every reference as a placeholder."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return str(sep).join(p if isinstance(p, str) else "ref" for p in parts)
    raise ValueError(f"unexpected DefinitionString {value!r}")


def happy_path(definition: dict[str, Any]) -> list[str]:
    """The states an order enters when nothing fails: StartAt, then each Next/Default, to the end."""
    states = definition["States"]
    path: list[str] = []
    name: str | None = definition["StartAt"]
    while name is not None and name not in path:
        path.append(name)
        state = states[name]
        name = state.get("Next") or state.get("Default")
        if state.get("End") or state.get("Type") in ("Succeed", "Fail"):
            break
    return path


def template_figures(assembly: CloudAssembly) -> dict[str, Any]:
    """Batch size, concurrency caps, timeouts and states per order of the orders pipeline."""
    mapping = next(assembly.resources("AWS::Lambda::EventSourceMapping"))
    function_id = mapping.properties["FunctionName"]["Ref"]
    function = assembly.resource(function_id)
    queue_id = mapping.properties["EventSourceArn"]["Fn::GetAtt"][0]
    machine = next(assembly.resources("AWS::StepFunctions::StateMachine"))
    definition = json.loads(_joined(machine.properties["DefinitionString"]))
    path = happy_path(definition)
    tasks = [s for s in path if definition["States"][s]["Type"] == "Task"]
    return {
        "batch_size": int(mapping.properties.get("BatchSize", 10)),
        "maximum_concurrency": (mapping.properties.get("ScalingConfig") or {}).get("MaximumConcurrency"),
        "reserved_concurrency": function.properties.get("ReservedConcurrentExecutions"),
        "intake_timeout_seconds": int(function.properties.get("Timeout", 3)),
        "visibility_timeout_seconds": int(assembly.resource(queue_id).properties.get("VisibilityTimeout", 30)),
        "workflow": machine.properties.get("StateMachineType", "STANDARD"),
        "states_per_order": len(path),
        "throttle_requeue": env_names.THROTTLE_REQUEUE_QUEUE_URL
        in ((function.properties.get("Environment") or {}).get("Variables") or {}),
        "tasks_per_order": len(tasks),
    }


def _largest_requeue_delay(records: float) -> float:
    """The queue is empty once the last requeued record's delay ends: the largest of the delays of
    the records requeued in the drain's last ``REQUEUE_MAX_SECONDS`` (about ``mu`` a second). Each
    is uniform between half the cap and the cap (equal jitter), and the expected largest of n
    uniform values on [a, b] is ``b - (b - a) / (n + 1)``: close to the cap, not the mean."""
    half = REQUEUE_MAX_SECONDS / 2
    return REQUEUE_MAX_SECONDS - half / (max(records, 0.0) + 1)


def predict(
    rate: float, minutes: float, quotas: Quotas, figures: dict[str, Any], *, baseline: float = 0.0
) -> dict[str, Any]:
    """The capacity figures at ``rate`` orders/s for ``minutes`` (see the module doc for the model)."""
    seconds = minutes * 60
    express = figures["workflow"] == "EXPRESS"
    concurrency = intake_concurrency(quotas, figures)
    ceilings = queue_ceilings(quotas, figures)
    if not express:
        ceilings["sfn_transition_refill"] = quotas.sfn_transition_refill / figures["states_per_order"]
    binding = min(ceilings, key=lambda k: ceilings[k])
    mu, burst = queue_service(quotas, figures)
    start_refill = ceilings["sfn_start_refill"]
    backlog = max(0.0, (rate - mu) * seconds - burst)
    drain = backlog / (mu - baseline) if backlog and mu > baseline else 0.0
    if backlog and figures.get("throttle_requeue"):
        drain += _largest_requeue_delay(mu * REQUEUE_MAX_SECONDS)
    # Orders end at the smaller of the queue's service rate and what the transition refill allows.
    ends_per_second = min(mu, ceilings.get("sfn_transition_refill", mu))
    remaining = max(0.0, (rate - ends_per_second) * seconds - burst)
    terminal = remaining / (ends_per_second - baseline) if remaining and ends_per_second > baseline else 0.0
    units = PerOrder(
        lambda_invocations=figures["tasks_per_order"] + 1 / figures["batch_size"],
        dynamodb_wru=2.0 * figures["tasks_per_order"] + 3,
        dynamodb_rru=1.0 * figures["tasks_per_order"] + 1,
        sqs_requests=3 / figures["batch_size"] + 1,
        state_transitions=figures["states_per_order"],
    )
    usd = dollars_per_million_orders(units)
    key = "express_workflow" if express else "standard_workflow"
    increases = _quota_increases(rate, quotas, figures, concurrency, start_refill)
    return {
        "rate_per_second": round(rate, 3),
        "minutes": minutes,
        "template": figures,
        "ceilings_orders_per_second": {k: round(v, 3) for k, v in ceilings.items()},
        "binds_first": binding if ceilings[binding] < rate else None,
        "queue_served_per_second": round(mu, 3),
        # What the order API's stage, POST /orders and usage plan are throttled at (stacks/order_constructs/api.py).
        "api_throttle": dict(zip(("rate_per_second", "burst"), api_throttle(quotas, figures), strict=True)),
        "predicted_peak_backlog": round(backlog, 1),
        "predicted_drain_seconds": round(drain, 1),
        "predicted_terminal_after_seconds": round(max(drain, terminal), 1),
        # Executions start at most at the queue's service rate; they are slowed only if the
        # transitions of what does start exceed the refill.
        "execution_slowdown": (
            round(max(1.0, min(rate, mu) * figures["states_per_order"] / quotas.sfn_transition_refill), 2)
            if not express
            else None
        ),
        "usd_per_hour": round(rate * 3600 / 1e6 * usd[key], 2),
        "usd_assumptions": "per-order units estimated from the template; prices from harness/reporting/costs.py",
        "quota_increases_to_remove_backlog": increases,
    }


def _quota_increases(
    rate: float, quotas: Quotas, figures: dict[str, Any], concurrency: float, start_refill: float
) -> dict[str, float]:
    """The quotas to raise (to what) so that ``rate`` leaves no backlog."""
    express = figures["workflow"] == "EXPRESS"
    increases = {}
    if rate > start_refill:
        increases["sfn_start_refill"] = round(rate, 1)
    if not express and rate * figures["states_per_order"] > quotas.sfn_transition_refill:
        increases["sfn_transition_refill"] = round(rate * figures["states_per_order"], 1)
    needed_batches = rate * BATCH_SECONDS / figures["batch_size"]
    if needed_batches > concurrency:
        increases["intake MaximumConcurrency / lambda_concurrency"] = round(needed_batches, 1)
    return increases


def load_template(assembly_dir: Path | None) -> CloudAssembly:
    if assembly_dir is not None:
        return CloudAssembly(assembly_dir, "OrderPipeline-dev")
    import os
    from unittest import mock

    from harness.stack.synth import DEFAULT_OUTDIR, synthesize
    from local_cloud.environment import FAKE_ENV

    with mock.patch.dict(os.environ, FAKE_ENV):
        return synthesize(DEFAULT_OUTDIR, "dev")


def predict_from_assembly(
    rate: float, minutes: float, quotas: Quotas, assembly_dir: Path | None, *, baseline: float = 0.0
) -> dict[str, Any]:
    return predict(rate, minutes, quotas, template_figures(load_template(assembly_dir)), baseline=baseline)


def format_capacity(p: dict[str, Any]) -> str:
    lines = [
        f"offered: {p['rate_per_second'] * 60:,.0f}/min for {p['minutes']:g} min",
        f"template: {json.dumps(p['template'])}",
        "ceilings (orders/s): " + ", ".join(f"{k} {v:,}" for k, v in p["ceilings_orders_per_second"].items()),
        f"binds first: {p['binds_first'] or 'nothing (the rate fits every quota)'}",
        f"order API throttle: {p['api_throttle']['rate_per_second']:,g}/s, burst {p['api_throttle']['burst']:,}",
        f"predicted peak backlog: {p['predicted_peak_backlog']:,.0f} messages",
        f"time to drain after the peak: {p['predicted_drain_seconds']:,.0f} s",
        f"every order terminal after the peak: {p['predicted_terminal_after_seconds']:,.0f} s",
        f"executions slowed by state transitions: x{p['execution_slowdown']}",
        f"cost at this rate: ${p['usd_per_hour']:,.2f}/hour ({p['usd_assumptions']})",
        "quota increases that remove the backlog: "
        + (", ".join(f"{k} >= {v:,}" for k, v in p["quota_increases_to_remove_backlog"].items()) or "none needed"),
    ]
    return "\n".join(lines)
