"""Card data at rest: prod's customer-managed key on the orders table and every log group; retention."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk.assertions import Template

from constructs_lib.encryption import LOGS_KEY_ACTIONS, DataEncryptionKey, DataEncryptionKeyProps
from stacks.order_constructs.order_saga import OrderSaga
from tests.infra.conftest import SynthResult, as_list

ONE_YEAR_DAYS = 365


def _data_key_arn(prod: SynthResult) -> dict[str, Any]:
    assert prod.stack.data_key is not None
    return {"Fn::GetAtt": [prod.logical_id(prod.stack.data_key), "Arn"]}


def test_encryption_prod_data_key_rotated_and_retained(prod: SynthResult) -> None:
    key_id = prod.logical_id(prod.stack.data_key)
    key = prod.resources[key_id]
    assert key["Type"] == "AWS::KMS::Key"
    assert key["Properties"]["EnableKeyRotation"] is True
    assert key["DeletionPolicy"] == "Retain"
    # one data key; the other key is the alarm topic's (CloudWatch cannot use aws/sns)
    assert set(prod.of_type("AWS::KMS::Key")) == {key_id, prod.logical_id(prod.stack.alarm_topic.master_key)}


def test_encryption_prod_orders_table_customer_managed(prod: SynthResult) -> None:
    props = prod.properties(prod.logical_id(prod.stack.orders_table))
    assert props["SSESpecification"] == {"KMSMasterKeyId": _data_key_arn(prod), "SSEEnabled": True, "SSEType": "KMS"}


def test_encryption_dev_keeps_aws_owned_keys(dev: SynthResult) -> None:
    assert dev.stack.data_key is None
    for logical_id, table in dev.of_type("AWS::DynamoDB::Table").items():
        assert "SSESpecification" not in table["Properties"], logical_id
    for logical_id, group in dev.of_type("AWS::Logs::LogGroup").items():
        assert "KmsKeyId" not in group["Properties"], logical_id
    assert len(dev.of_type("AWS::KMS::Key")) == 1  # the alarm topic's only


def test_encryption_prod_every_log_group_uses_data_key_kept_a_year(prod: SynthResult) -> None:
    groups = prod.of_type("AWS::Logs::LogGroup")
    expected = {prod.logical_id(f.log_group) for f in prod.stack.functions} | {
        prod.logical_id(prod.stack.saga.log_group),
        prod.logical_id(prod.stack.order_api.access_logs),
        prod.logical_id(prod.stack.order_api.execution_logs),
    }
    assert set(groups) == expected
    assert len(groups) == 14  # 11 functions (no sandbox) + the state machine + the API's access and execution logs
    for logical_id, group in groups.items():
        assert group["Properties"]["KmsKeyId"] == _data_key_arn(prod), logical_id
        assert group["Properties"]["RetentionInDays"] >= ONE_YEAR_DAYS, logical_id


def test_encryption_prod_key_policy_lets_logs_use_key_for_own_log_groups(prod: SynthResult) -> None:
    policy = prod.properties(prod.logical_id(prod.stack.data_key))["KeyPolicy"]
    (statement,) = [s for s in policy["Statement"] if "Service" in s.get("Principal", {})]
    assert statement["Principal"] == {
        "Service": {"Fn::Join": ["", ["logs.", {"Ref": "AWS::Region"}, ".amazonaws.com"]]}
    }
    assert statement["Effect"] == "Allow"
    assert set(as_list(statement["Action"])) == set(LOGS_KEY_ACTIONS)
    assert statement["Condition"] == {
        "ArnLike": {
            "kms:EncryptionContext:aws:logs:arn": {
                "Fn::Join": [
                    "",
                    [
                        "arn:",
                        {"Ref": "AWS::Partition"},
                        ":logs:",
                        {"Ref": "AWS::Region"},
                        ":",
                        {"Ref": "AWS::AccountId"},
                        ":log-group:*",
                    ],
                ]
            }
        }
    }


def _kms_statements(synth: SynthResult, role_id: str) -> list[dict[str, Any]]:
    return [s for s in synth.statements_of_role(role_id) if any(a.startswith("kms:") for a in as_list(s["Action"]))]


def test_encryption_prod_orders_table_callers_may_use_data_key(prod: SynthResult) -> None:
    """DynamoDB calls KMS for the caller: every role touching the orders table needs the key, named actions only."""
    orders_id = prod.logical_id(prod.stack.orders_table)
    callers = {
        prod.logical_id(f.role)
        for f in prod.stack.functions
        for s in prod.statements_of_role(prod.logical_id(f.role))
        if orders_id in json.dumps(s["Resource"]) and any(a.startswith("dynamodb:") for a in as_list(s["Action"]))
    }
    assert prod.logical_id(prod.stack.sweeper.role) in callers and prod.logical_id(prod.stack.intake.role) in callers
    for role_id in callers:
        (statement,) = _kms_statements(prod, role_id)
        assert as_list(statement["Resource"]) == [_data_key_arn(prod)], role_id
        assert not any("*" in a for a in as_list(statement["Action"])), role_id
    # the sweeper writes too now (finish, park, reconciliation record): the same actions as a step
    (sweeper_kms,) = _kms_statements(prod, prod.logical_id(prod.stack.sweeper.role))
    assert set(as_list(sweeper_kms["Action"])) >= {"kms:Decrypt", "kms:GenerateDataKey"}
    (charge_kms,) = _kms_statements(prod, prod.logical_id(prod.stack.charge.role))
    assert set(as_list(charge_kms["Action"])) == {
        "kms:Decrypt",
        "kms:DescribeKey",
        "kms:Encrypt",
        "kms:GenerateDataKey",
    }
    # a role that never touches the orders table gets no key
    assert _kms_statements(prod, prod.logical_id(prod.stack.dlq_replay.role)) == []


def test_encryption_dev_roles_get_no_kms(dev: SynthResult) -> None:
    for f in dev.stack.functions:
        assert _kms_statements(dev, dev.logical_id(f.role)) == [], f.node.id


@pytest.mark.parametrize(("stage", "days"), [("dev", 30), ("prod", 365)])
def test_retention_state_machine_log_group(stage: str, days: int, request: pytest.FixtureRequest) -> None:
    synth: SynthResult = request.getfixturevalue(stage)
    assert synth.properties(synth.logical_id(synth.stack.saga.log_group))["RetentionInDays"] == days


def test_saga_docstring_records_the_logging_decision() -> None:
    doc = OrderSaga.__doc__ or ""
    assert "level ALL *with* execution data" in doc
    assert "references" in doc and "no card" in doc


def test_data_encryption_key_without_log_groups_has_no_service_statement() -> None:
    stack = Stack(App(), "KeyUnderTest")
    DataEncryptionKey(stack, "Key", props=DataEncryptionKeyProps(allow_log_groups=False))
    template = Template.from_stack(stack)
    template.has_resource_properties("AWS::KMS::Key", {"EnableKeyRotation": True})
    (key,) = template.find_resources("AWS::KMS::Key").values()
    assert [s for s in key["Properties"]["KeyPolicy"]["Statement"] if "Service" in s["Principal"]] == []
    template.has_resource("AWS::KMS::Key", {"DeletionPolicy": "Retain"})
