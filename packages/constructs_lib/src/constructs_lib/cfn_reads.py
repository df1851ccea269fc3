"""Reading synthesized L1 resources before synthesis (for the synth-time checks): references, properties
in either key case, the metrics an alarm reads."""

from __future__ import annotations

from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_cloudwatch as cloudwatch


def ref_target(value: Any) -> str | None:
    """Logical ID behind ``{"Ref": id}`` or ``{"Fn::GetAtt": [id, attr]}``, else None."""
    if isinstance(value, dict):
        if "Ref" in value:
            return str(value["Ref"])
        if "Fn::GetAtt" in value:
            return str(value["Fn::GetAtt"][0])
    return None


def get(mapping: dict[str, Any], key: str) -> Any:
    """Read a property whether the resolver produced camelCase or PascalCase keys."""
    return mapping.get(key, mapping.get(key[:1].upper() + key[1:]))


def alarm_metrics(stack: Stack, alarm: cloudwatch.CfnAlarm) -> list[dict[str, Any]]:
    """The metric an alarm watches, or each metric a metric-math alarm's expression reads
    (an alarm on ``errors - FILL(expected, 0)`` still alarms on the function's errors)."""
    if alarm.metric_name is not None:
        dims = stack.resolve(alarm.dimensions)
        return [{"namespace": alarm.namespace, "metric_name": alarm.metric_name, "dimensions": dims}]
    found = []
    for query in stack.resolve(alarm.metrics) or []:
        stat = get(query, "metricStat")
        if isinstance(stat, dict):
            m = get(stat, "metric")
            found.append(
                {
                    "namespace": get(m, "namespace"),
                    "metric_name": get(m, "metricName"),
                    "dimensions": get(m, "dimensions"),
                }
            )
    return found
