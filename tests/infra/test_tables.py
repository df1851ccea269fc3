"""DynamoDB tables and the stage context (dev vs prod)."""

from __future__ import annotations

from typing import Any

from constructs_lib.tables import IDEMPOTENCY_KEY_ATTR, IDEMPOTENCY_TTL_ATTR
from order_domain.sweeper import STATUS_INDEX
from tests.infra.conftest import SynthResult


def _key_schema(props: dict[str, Any]) -> dict[str, str]:
    return {k["KeyType"]: k["AttributeName"] for k in props["KeySchema"]}


def test_idempotency_table_matches_powertools_layout(dev: SynthResult) -> None:
    props = dev.properties(dev.logical_id(dev.stack.idempotency_table))
    assert (IDEMPOTENCY_KEY_ATTR, IDEMPOTENCY_TTL_ATTR) == ("id", "expiration")
    assert _key_schema(props) == {"HASH": "id"}
    assert props["AttributeDefinitions"] == [{"AttributeName": "id", "AttributeType": "S"}]
    assert props["TimeToLiveSpecification"] == {"AttributeName": "expiration", "Enabled": True}
    # on-demand and PITR: test_tables_on_demand_with_pitr, for every table


def test_orders_table_keyed_by_order_id(dev: SynthResult) -> None:
    props = dev.properties(dev.logical_id(dev.stack.orders_table))
    assert _key_schema(props) == {"HASH": "order_id"}
    # order_id for the table, status / updated_at for the by-status index, settle_shard / settle_due for the
    # sparse unsettled index (tests/infra/test_settlement_infra.py); all strings
    assert sorted(props["AttributeDefinitions"], key=lambda a: a["AttributeName"]) == [
        {"AttributeName": "order_id", "AttributeType": "S"},
        {"AttributeName": "settle_due", "AttributeType": "S"},
        {"AttributeName": "settle_shard", "AttributeType": "S"},
        {"AttributeName": "status", "AttributeType": "S"},
        {"AttributeName": "updated_at", "AttributeType": "S"},
    ]


def test_orders_table_by_status_index_serves_the_sweeper(dev: SynthResult) -> None:
    """The sweeper queries status = X AND updated_at < cutoff, and logs each hit's correlation_id."""
    props = dev.properties(dev.logical_id(dev.stack.orders_table))
    (index,) = [i for i in props["GlobalSecondaryIndexes"] if i["IndexName"] == STATUS_INDEX]
    assert index["IndexName"] == STATUS_INDEX == "by-status"
    assert _key_schema(index) == {"HASH": "status", "RANGE": "updated_at"}
    # order_id (table key) and the index keys are always projected; only correlation_id is added
    assert index["Projection"] == {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["correlation_id"]}
    assert "ProvisionedThroughput" not in index  # on-demand, like the table


def test_tables_other_than_orders_have_no_secondary_index(dev: SynthResult) -> None:
    orders_id = dev.logical_id(dev.stack.orders_table)
    for logical_id, table in dev.of_type("AWS::DynamoDB::Table").items():
        if logical_id != orders_id:
            assert "GlobalSecondaryIndexes" not in table["Properties"], logical_id
            assert "LocalSecondaryIndexes" not in table["Properties"], logical_id


def test_ledger_table_has_sort_key(dev: SynthResult) -> None:
    props = dev.properties(dev.logical_id(dev.stack.ledger_table))
    assert _key_schema(props) == {"HASH": "pk", "RANGE": "sk"}


def test_tables_on_demand_with_pitr(dev: SynthResult) -> None:
    tables = dev.of_type("AWS::DynamoDB::Table")
    assert len(tables) == 5  # idempotency, orders, inventory, failures, sandbox ledger
    for logical_id, table in tables.items():
        props = table["Properties"]
        assert props["BillingMode"] == "PAY_PER_REQUEST", logical_id
        assert "ProvisionedThroughput" not in props, logical_id
        assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}, logical_id


def test_tables_dev_stage_deletable(dev: SynthResult) -> None:
    for logical_id, table in dev.of_type("AWS::DynamoDB::Table").items():
        assert table["DeletionPolicy"] == "Delete", logical_id
        assert table["UpdateReplacePolicy"] == "Delete", logical_id
        # Emitted as an explicit `false` today; absent would be equivalent.
        assert table["Properties"].get("DeletionProtectionEnabled", False) is False, logical_id


def test_tables_prod_stage_retained_and_protected(prod: SynthResult) -> None:
    tables = prod.of_type("AWS::DynamoDB::Table")
    assert len(tables) == 4  # no sandbox ledger in prod
    for logical_id, table in tables.items():
        assert table["DeletionPolicy"] == "Retain", logical_id
        assert table["UpdateReplacePolicy"] == "Retain", logical_id
        assert table["Properties"]["DeletionProtectionEnabled"] is True, logical_id


def test_log_groups_follow_stage_removal_policy_and_retention(dev: SynthResult, prod: SynthResult) -> None:
    # dev: 13 functions (with the two sandbox providers and the providers' webhook) + the state machine + the API's
    # access and execution logs; prod: no sandbox
    for synth, policy, count, days in ((dev, "Delete", 16, 30), (prod, "Retain", 14, 365)):
        groups = synth.of_type("AWS::Logs::LogGroup")
        assert len(groups) == count
        for logical_id, group in groups.items():
            assert group["DeletionPolicy"] == policy, logical_id
            assert group["Properties"]["RetentionInDays"] == days, logical_id


def test_stage_prod_subscribes_alarm_email(dev: SynthResult, prod: SynthResult) -> None:
    dev.template.resource_count_is("AWS::SNS::Subscription", 0)
    prod.template.has_resource_properties(
        "AWS::SNS::Subscription",
        {
            "Protocol": "email",
            "Endpoint": "ops@example.com",
            "TopicArn": {"Ref": prod.logical_id(prod.stack.alarm_topic)},
        },
    )


def test_stage_prod_names_stack_by_stage(prod: SynthResult) -> None:
    assert prod.stack.stack_name == "OrderPipeline-prod"
