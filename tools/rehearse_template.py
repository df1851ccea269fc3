"""``make rehearse``: the resource types of the synthesized template that MiniStack's CloudFormation does not
know, and what the rehearsal does with each instead.

MiniStack 1.5.33 answers a change set holding any of them with ``Template format error: Unrecognized resource
types: [AWS::CloudWatch::CompositeAlarm, AWS::Logs::QueryDefinition]`` and deploys nothing (tried 2026-11-28;
AWS has both: https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-cloudwatch-compositealarm.html,
https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-logs-querydefinition.html). The
rehearsal sets them aside before the deploy (refusing one that another resource or an output references, which
the deploy would then miss) and creates afterwards, through MiniStack's own API, what that API has. Each is
named in the rehearsal's output and in docs/deploy.md's differences table.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

COMPOSITE_ALARM = "AWS::CloudWatch::CompositeAlarm"
QUERY_DEFINITION = "AWS::Logs::QueryDefinition"
#: What the rehearsal does instead of deploying each type through CloudFormation.
UNSUPPORTED: dict[str, str] = {
    COMPOSITE_ALARM: (
        "created after the deploy with PutCompositeAlarm (MiniStack's CloudWatch has it and evaluates the rule "
        "when a child alarm changes state), its Ref and GetAtt read from the deployed stack"
    ),
    QUERY_DEFINITION: (
        "not created: MiniStack's CloudWatch Logs has no PutQueryDefinition either; ops trace does not read it "
        "(StartQuery over the stack's LogGroupNames output), the definition is checked at synth "
        "(tests/infra/test_log_queries.py)"
    ),
}


def _names(node: Any) -> set[str]:
    """The logical IDs ``node`` refers to (Ref, Fn::GetAtt, ``${X}`` in an Fn::Sub string)."""
    found: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("Ref"), str):
                found.add(item["Ref"])
            if isinstance(item.get("Fn::GetAtt"), list):
                found.add(item["Fn::GetAtt"][0])
            sub = item.get("Fn::Sub")
            text = sub[0] if isinstance(sub, list) else sub
            if isinstance(text, str):
                found.update(part.split("}")[0].split(".")[0] for part in text.split("${")[1:])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def set_aside_unsupported(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Remove, in place, each resource of an :data:`UNSUPPORTED` type; those removed by logical ID.
    ``ValueError`` when another resource (property or ``DependsOn``) or an output references one."""
    resources = template.get("Resources", {})
    aside = {k: r for k, r in resources.items() if r.get("Type") in UNSUPPORTED}
    for logical_id in aside:
        del resources[logical_id]
    for where, node in [*resources.items(), *template.get("Outputs", {}).items()]:
        depends = node.get("DependsOn", []) if isinstance(node, dict) else []
        referenced = (_names(node) | set([depends] if isinstance(depends, str) else depends)) & set(aside)
        if referenced:
            raise ValueError(f"{', '.join(sorted(referenced))} referenced by {where}: cannot be set aside")
    return aside


def describe_set_aside(aside: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per resource set aside: its type, logical ID and what the rehearsal does instead."""
    return [
        f"{r['Type']} {logical_id}: MiniStack's CloudFormation does not know the type; {UNSUPPORTED[r['Type']]}"
        for logical_id, r in sorted(aside.items())
    ]


def resolve(node: Any, physical: Mapping[str, str], alarm_arn: Callable[[str], str]) -> Any:
    """``node`` with its Ref (a deployed resource's physical ID), Fn::GetAtt ``[alarm, Arn]`` and Fn::Join
    resolved; ``ValueError`` for any other intrinsic function."""
    if isinstance(node, list):
        return [resolve(item, physical, alarm_arn) for item in node]
    if not isinstance(node, dict):
        return node
    if set(node) == {"Ref"}:
        return physical[node["Ref"]]
    if set(node) == {"Fn::GetAtt"} and node["Fn::GetAtt"][1] == "Arn":
        return alarm_arn(physical[node["Fn::GetAtt"][0]])
    if set(node) == {"Fn::Join"}:
        separator, parts = node["Fn::Join"]
        return separator.join(str(resolve(part, physical, alarm_arn)) for part in parts)
    functions = [k for k in node if k == "Ref" or k.startswith("Fn::")]
    if functions:
        raise ValueError(f"cannot resolve {functions[0]} outside CloudFormation: {json.dumps(node)[:200]}")
    return {key: resolve(value, physical, alarm_arn) for key, value in node.items()}


def create_composite_alarms(
    aside: Mapping[str, Mapping[str, Any]], physical: Mapping[str, str], cloudwatch: Any
) -> list[str]:
    """PutCompositeAlarm for each composite alarm set aside, with the deployed stack's names and ARNs
    (``physical``: logical ID to physical ID); the names of the alarms created."""

    def alarm_arn(name: str) -> str:
        found = cloudwatch.describe_alarms(AlarmNames=[name])
        alarms = found.get("MetricAlarms", []) + found.get("CompositeAlarms", [])
        if not alarms:
            raise ValueError(f"alarm {name} not found on the endpoint")
        return str(alarms[0]["AlarmArn"])

    created = []
    for _, resource in sorted(aside.items()):
        if resource["Type"] == COMPOSITE_ALARM:
            properties = resolve(resource["Properties"], physical, alarm_arn)
            cloudwatch.put_composite_alarm(**properties)
            created.append(str(properties["AlarmName"]))
    return created
