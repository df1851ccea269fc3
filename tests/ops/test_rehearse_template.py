"""``tools/rehearse_template.py``: the resource types MiniStack's CloudFormation does not know, set aside
before the deploy and (composite alarms) created after it through the API MiniStack has."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from tools import rehearse_template

RULE = {
    "Fn::Join": [
        "",
        ['(ALARM("', {"Fn::GetAtt": ["ChildA", "Arn"]}, '") OR ALARM("', {"Fn::GetAtt": ["ChildB", "Arn"]}, '"))'],
    ]
}


def _template() -> dict[str, Any]:
    return {
        "Resources": {
            "Topic": {"Type": "AWS::SNS::Topic"},
            "ChildA": {"Type": "AWS::CloudWatch::Alarm", "Properties": {"MetricName": "A"}},
            "ChildB": {"Type": "AWS::CloudWatch::Alarm", "Properties": {"MetricName": "B"}},
            "AtRisk": {
                "Type": "AWS::CloudWatch::CompositeAlarm",
                "Properties": {
                    "AlarmName": "AtRisk",
                    "AlarmRule": RULE,
                    "AlarmActions": [{"Ref": "Topic"}],
                    "AlarmDescription": "[page] Runbook: docs/runbooks/orders-at-risk.md",
                },
            },
            "Trace": {"Type": "AWS::Logs::QueryDefinition", "Properties": {"Name": "trace"}},
        },
        "Outputs": {"TopicArn": {"Value": {"Ref": "Topic"}}},
    }


def test_rehearse_template_set_aside_removes_each_unknown_type_and_names_it() -> None:
    template = _template()
    aside = rehearse_template.set_aside_unsupported(template)
    assert sorted(aside) == ["AtRisk", "Trace"]
    assert set(template["Resources"]) == {"Topic", "ChildA", "ChildB"}
    lines = rehearse_template.describe_set_aside(aside)
    assert any("AWS::CloudWatch::CompositeAlarm" in line and "AtRisk" in line for line in lines)
    assert any("AWS::Logs::QueryDefinition" in line and "PutQueryDefinition" in line for line in lines)


def test_rehearse_template_set_aside_refuses_a_resource_something_else_references() -> None:
    template = _template()
    template["Outputs"]["Trace"] = {"Value": {"Ref": "Trace"}}
    with pytest.raises(ValueError, match=r"Trace.*referenced"):
        rehearse_template.set_aside_unsupported(template)
    template = _template()
    template["Resources"]["Topic"]["DependsOn"] = ["AtRisk"]
    with pytest.raises(ValueError, match=r"AtRisk.*referenced"):
        rehearse_template.set_aside_unsupported(template)


def test_rehearse_template_resolve_reads_refs_and_alarm_arns_from_the_stack() -> None:
    physical = {"Topic": "arn:aws:sns:us-east-1:000000000000:t", "ChildA": "stack-ChildA", "ChildB": "stack-ChildB"}
    arns = {"stack-ChildA": "arn:alarm:a", "stack-ChildB": "arn:alarm:b"}
    resolved = rehearse_template.resolve(_template()["Resources"]["AtRisk"]["Properties"], physical, arns.__getitem__)
    assert resolved["AlarmRule"] == '(ALARM("arn:alarm:a") OR ALARM("arn:alarm:b"))'
    assert resolved["AlarmActions"] == ["arn:aws:sns:us-east-1:000000000000:t"]
    with pytest.raises(ValueError, match="Fn::Sub"):
        rehearse_template.resolve({"X": {"Fn::Sub": "${AWS::Region}"}}, physical, arns.__getitem__)


def test_rehearse_template_create_composite_alarms_puts_them_resolved() -> None:
    cloudwatch = boto3.client(
        "cloudwatch", region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test"
    )
    physical = {"Topic": "arn:aws:sns:us-east-1:000000000000:t", "ChildA": "stack-ChildA", "ChildB": "stack-ChildB"}
    aside = rehearse_template.set_aside_unsupported(_template())
    with Stubber(cloudwatch) as stub:
        for name in ("stack-ChildA", "stack-ChildB"):
            found = {"MetricAlarms": [{"AlarmName": name, "AlarmArn": f"arn:alarm:{name}"}]}
            stub.add_response("describe_alarms", found, {"AlarmNames": [name]})
        stub.add_response(
            "put_composite_alarm",
            {},
            {
                "AlarmName": "AtRisk",
                "AlarmRule": '(ALARM("arn:alarm:stack-ChildA") OR ALARM("arn:alarm:stack-ChildB"))',
                "AlarmActions": ["arn:aws:sns:us-east-1:000000000000:t"],
                "AlarmDescription": "[page] Runbook: docs/runbooks/orders-at-risk.md",
            },
        )
        assert rehearse_template.create_composite_alarms(aside, physical, cloudwatch) == ["AtRisk"]
        stub.assert_no_pending_responses()
    with Stubber(cloudwatch) as stub, pytest.raises(ValueError, match="stack-ChildA not found"):
        stub.add_response("describe_alarms", {"MetricAlarms": []}, {"AlarmNames": ["stack-ChildA"]})
        rehearse_template.create_composite_alarms(aside, physical, cloudwatch)
