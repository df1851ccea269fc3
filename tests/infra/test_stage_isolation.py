"""Stage isolation: a dev stack in the same account and Region never feeds prod's alarms or dashboard.

Custom metrics are keyed by (namespace, metric name, dimensions); CloudWatch merges every datapoint
with the same key whoever emitted it
(https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch_concepts.html#Metric). So
the dev and prod templates must share no key of a custom metric: not in what the functions emit (EMF:
``POWERTOOLS_METRICS_NAMESPACE`` and dimension ``service=POWERTOOLS_SERVICE_NAME``), nor in what the
alarms and the dashboard read. ``AWS/*`` metrics are keyed by the resource's own name (a ``Ref`` to a
resource of the stack, a different physical resource per stack) and are left out.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.infra.conftest import SynthResult, join_to_string

#: (namespace, metric name, sorted (dimension, value) pairs); metric name "*" for what a function emits.
Key = tuple[str, str, tuple[tuple[str, str], ...]]


def _key(namespace: str, name: str, dimensions: list[dict[str, Any]]) -> Key:
    return namespace, name, tuple(sorted((d["Name"], json.dumps(d["Value"], sort_keys=True)) for d in dimensions))


def _alarm_keys(synth: SynthResult) -> set[Key]:
    keys: set[Key] = set()
    for alarm in synth.of_type("AWS::CloudWatch::Alarm").values():
        props = alarm["Properties"]
        if "MetricName" in props:
            keys.add(_key(props["Namespace"], props["MetricName"], props.get("Dimensions", [])))
        for query in props.get("Metrics", []):
            if "MetricStat" in query:
                m = query["MetricStat"]["Metric"]
                keys.add(_key(m["Namespace"], m["MetricName"], m.get("Dimensions", [])))
    return keys


def _dashboard_keys(synth: SynthResult) -> set[Key]:
    keys: set[Key] = set()
    for dashboard in synth.of_type("AWS::CloudWatch::Dashboard").values():
        body = json.loads(join_to_string(dashboard["Properties"]["DashboardBody"]))
        for widget in body["widgets"]:
            for row in widget["properties"].get("metrics", []):
                if not isinstance(row[0], str):  # metric math
                    continue
                parts = [p for p in row if isinstance(p, str)]
                pairs = [{"Name": n, "Value": v} for n, v in zip(parts[2::2], parts[3::2], strict=True)]
                keys.add(_key(parts[0], parts[1], pairs))
    return keys


def _emitted_keys(synth: SynthResult) -> set[Key]:
    """What each function's EMF lines carry: its namespace and its ``service`` dimension."""
    keys: set[Key] = set()
    for function in synth.of_type("AWS::Lambda::Function").values():
        env = function["Properties"].get("Environment", {}).get("Variables", {})
        if "POWERTOOLS_METRICS_NAMESPACE" in env:
            service = [{"Name": "service", "Value": env["POWERTOOLS_SERVICE_NAME"]}]
            keys.add(_key(env["POWERTOOLS_METRICS_NAMESPACE"], "*", service))
    return keys


def _custom(keys: set[Key]) -> set[Key]:
    return {k for k in keys if not k[0].startswith("AWS/")}


def _all_custom_keys(synth: SynthResult) -> set[Key]:
    return _custom(_alarm_keys(synth) | _dashboard_keys(synth) | _emitted_keys(synth))


def test_stage_isolation_dev_and_prod_share_no_custom_metric_key(dev: SynthResult, prod: SynthResult) -> None:
    dev_keys, prod_keys = _all_custom_keys(dev), _all_custom_keys(prod)
    assert dev_keys and prod_keys
    assert dev_keys & prod_keys == set()
    # Nor the same (namespace, dimensions) of an emitter: a dev function's EMF cannot land on a prod key.
    assert {(k[0], k[2]) for k in dev_keys} & {(k[0], k[2]) for k in prod_keys} == set()


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_stage_isolation_alarms_and_dashboard_read_what_the_functions_emit(
    stage: str, request: pytest.FixtureRequest
) -> None:
    """Every custom metric an alarm or the dashboard reads is one a function of the same stack emits
    (its namespace and ``service``): the stage qualifier is on both sides, or an alarm reads nothing."""
    synth: SynthResult = request.getfixturevalue(stage)
    emitted = {(k[0], k[2]) for k in _emitted_keys(synth)}
    read = _custom(_alarm_keys(synth) | _dashboard_keys(synth))
    assert read
    assert {(k[0], k[2]) for k in read} - emitted == set()
    qualified = ("stage", json.dumps(stage))
    assert all(stage in k[0].split("/") or qualified in k[2] for k in read | _custom(_emitted_keys(synth))), read
