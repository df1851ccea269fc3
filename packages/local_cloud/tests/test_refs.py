"""Ref values of the local deployment, as CloudFormation returns them."""

from __future__ import annotations

import types

from local_cloud.deploy_plan import DEFAULT_ENTRY, PLAN


def test_refs_api_gateway_stage_is_its_stage_name() -> None:
    """``Ref`` of an ``AWS::ApiGateway::Stage`` "returns the name of the stage, such as MyTestStage"
    (https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-apigateway-stage.html):
    the API's 5XX alarm names its stage with it, and AWS/ApiGateway datapoints carry the stage name."""
    deployment = types.SimpleNamespace(refs={}, attrs={}, stack="Stack")
    stage = types.SimpleNamespace(logical_id="ApiStage1A2B", properties={"StageName": "v1"})
    PLAN.get("AWS::ApiGateway::Stage", DEFAULT_ENTRY).name(deployment, stage)  # type: ignore[arg-type]
    assert deployment.refs["ApiStage1A2B"] == "v1"
