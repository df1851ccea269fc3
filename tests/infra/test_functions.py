"""Lambda functions: shared defaults, environment wiring and least-privilege IAM (dev template)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import order_domain.env as env_names
from constructs_lib.function import DEFAULT_RUNTIME
from tests.infra.conftest import SynthResult, as_list, join_to_string, present

#: construct attribute on OrderPipelineStack -> POWERTOOLS_SERVICE_NAME
SERVICES = {
    "payment_provider": "sandbox-payment",
    "carrier": "sandbox-carrier",
    "reserve": "reserve-inventory",
    "release": "release-inventory",
    "charge": "charge-payment",
    "refund": "refund-payment",
    "ship": "ship-order",
    "cancel_shipment": "cancel-shipment",
    "finalize": "finalize-order",
    "intake": "intake",
    "sweeper": "sweeper",
    "dlq_replay": "dlq-replay",
    "provider_webhook": "provider-webhook",
}

#: Powertools idempotency records: put, read back, complete, delete on failure. No Scan, no Query.
DDB_ITEM_RW = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")
#: Saga steps read the order and update its status (never put or delete it): proven by the local run.
DDB_ORDER_STEP = ("dynamodb:GetItem", "dynamodb:UpdateItem")
#: Reservations: TransactWriteItems (Put + Update items, no ConditionCheck), GetItem, tombstone put.
DDB_TRANSACT = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem")

#: Resource "*" is only acceptable for actions that support no resource-level scoping.
UNSCOPABLE_ACTIONS = {
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
    "xray:GetSamplingRules",
    "xray:GetSamplingTargets",
    "logs:CreateLogDelivery",
    "logs:GetLogDelivery",
    "logs:UpdateLogDelivery",
    "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries",
    "logs:PutResourcePolicy",
    "logs:DescribeResourcePolicies",
    "logs:DescribeLogGroups",
}


@pytest.fixture(scope="module")
def functions(dev: SynthResult) -> dict[str, dict[str, Any]]:
    return dev.of_type("AWS::Lambda::Function")


def _fn(dev: SynthResult, attr: str) -> tuple[str, dict[str, Any]]:
    logical_id = dev.logical_id(getattr(dev.stack, attr).function)
    return logical_id, dev.properties(logical_id)


def test_functions_one_per_service(dev: SynthResult, functions: dict[str, dict[str, Any]]) -> None:
    assert len(functions) == len(SERVICES)
    for attr, service in SERVICES.items():
        _, props = _fn(dev, attr)
        assert props["Environment"]["Variables"]["POWERTOOLS_SERVICE_NAME"] == service


def test_functions_use_runtime_tracing_and_json_logs(dev: SynthResult, functions: dict[str, dict[str, Any]]) -> None:
    log_groups = dev.of_type("AWS::Logs::LogGroup")
    layers = {
        dev.logical_id(child)
        for child in dev.stack.node.find_all()
        if getattr(child, "cfn_resource_type", None) == "AWS::Lambda::LayerVersion"
    }
    assert len(layers) == 2
    for logical_id, function in functions.items():
        props = function["Properties"]
        assert props["Runtime"] == DEFAULT_RUNTIME.name, logical_id
        assert props["TracingConfig"] == {"Mode": "Active"}, logical_id
        logging = props["LoggingConfig"]
        assert logging["LogFormat"] == "JSON", logical_id
        assert logging["LogGroup"]["Ref"] in log_groups, logical_id
        assert len(props["Layers"]) == 2, logical_id
        assert {layer["Ref"] for layer in props["Layers"]} == layers, logical_id
        env = props["Environment"]["Variables"]
        assert env["POWERTOOLS_SERVICE_NAME"], logical_id
        assert env["POWERTOOLS_METRICS_NAMESPACE"] == "OrderPipeline/dev", logical_id
        assert props["Handler"] == "handler.handler", logical_id


def test_functions_log_groups_are_distinct(functions: dict[str, dict[str, Any]]) -> None:
    groups = [f["Properties"]["LoggingConfig"]["LogGroup"]["Ref"] for f in functions.values()]
    assert len(set(groups)) == len(groups)


def test_functions_environment_wired_to_resources(dev: SynthResult) -> None:
    stack = dev.stack
    ref = {
        name: {"Ref": dev.logical_id(obj)}
        for name, obj in {
            "idempotency": stack.idempotency_table,
            "orders": stack.orders_table,
            "inventory": stack.inventory_table,
            "ledger": stack.ledger_table,
            "machine": stack.saga.state_machine,
            "payment": present(stack.payment_provider).function,
            "carrier": present(stack.carrier).function,
            "needs_attention": stack.needs_attention.queue,
            "failures": stack.failures_table,
            "orders_queue": stack.orders_queue.queue,
            "orders_dlq": stack.orders_queue.dlq,
            "webhook_secret": stack.webhook.signing_secret,
        }.items()
    }
    base = {env_names.IDEMPOTENCY_TABLE_NAME: ref["idempotency"], env_names.ORDERS_TABLE_NAME: ref["orders"]}
    expected: dict[str, dict[str, Any]] = {
        "payment_provider": {env_names.LEDGER_TABLE_NAME: ref["ledger"]},
        "carrier": {env_names.LEDGER_TABLE_NAME: ref["ledger"]},
        "reserve": {**base, env_names.INVENTORY_TABLE_NAME: ref["inventory"]},
        "release": {**base, env_names.INVENTORY_TABLE_NAME: ref["inventory"]},
        "charge": {**base, env_names.PAYMENT_PROVIDER_FUNCTION: ref["payment"]},
        "refund": {**base, env_names.PAYMENT_PROVIDER_FUNCTION: ref["payment"]},
        "ship": {**base, env_names.CARRIER_FUNCTION: ref["carrier"]},
        "cancel_shipment": {**base, env_names.CARRIER_FUNCTION: ref["carrier"]},
        "finalize": {**base, env_names.NEEDS_ATTENTION_QUEUE_URL: ref["needs_attention"]},
        "intake": {
            **base,
            env_names.STATE_MACHINE_ARN: ref["machine"],
            env_names.FAILURES_TABLE_NAME: ref["failures"],
            env_names.DEAD_LETTER_QUEUE_URL: ref["orders_dlq"],
            env_names.THROTTLE_REQUEUE_QUEUE_URL: ref["orders_queue"],  # a throttled record is requeued with a delay
        },
        "dlq_replay": {
            env_names.FAILURES_TABLE_NAME: ref["failures"],
            # [{"dlq_url": <orders DLQ URL>, "source_url": <orders queue URL>}]
            env_names.REPLAY_TARGETS: {
                "Fn::Join": [
                    "",
                    ['[{"dlq_url":"', ref["orders_dlq"], '","source_url":"', ref["orders_queue"], '"}]'],
                ]
            },
        },
        "sweeper": {
            env_names.ORDERS_TABLE_NAME: ref["orders"],
            env_names.STUCK_AFTER_SECONDS: "13200",  # 220 minutes (the default stuck_after_minutes)
            env_names.RECONCILE_WINDOW_SECONDS: "900",
            env_names.STATE_MACHINE_ARN: ref["machine"],  # which orders still have a running execution
            env_names.NEEDS_ATTENTION_QUEUE_URL: ref["needs_attention"],  # it parks and announces
            env_names.PAYMENT_PROVIDER_FUNCTION: ref["payment"],  # it looks the charge and the shipment up
            env_names.CARRIER_FUNCTION: ref["carrier"],
        },
        "provider_webhook": {
            env_names.ORDERS_TABLE_NAME: ref["orders"],
            env_names.NEEDS_ATTENTION_QUEUE_URL: ref["needs_attention"],  # a late failure is announced
            env_names.WEBHOOK_SECRET_ARN: ref["webhook_secret"],  # dev's placeholder secret
        },
    }
    for attr, wanted in expected.items():
        _, props = _fn(dev, attr)
        env = props["Environment"]["Variables"]
        assert {k: env.get(k) for k in wanted} == wanted, attr
        # nothing beyond the Powertools settings: a function only learns about resources it uses
        assert set(env) - set(wanted) == {
            "POWERTOOLS_SERVICE_NAME",
            "POWERTOOLS_METRICS_NAMESPACE",
            "POWERTOOLS_LOG_LEVEL",
        }, attr


def test_function_roles_have_no_managed_policies(dev: SynthResult) -> None:
    roles = dev.of_type("AWS::IAM::Role")
    api = dev.stack.order_api
    # API Gateway's account-level logging role is not this stack's unless it opts in (api_account_log_role)
    assert api.api.node.try_find_child("CloudWatchRole") is None
    api_roles = {dev.logical_id(api.send_role), dev.logical_id(api.read_role)}
    assert len(roles) == len(SERVICES) + 1 + len(api_roles)  # + the state machine role, the API's two roles
    for logical_id, role in roles.items():
        assert "ManagedPolicyArns" not in role["Properties"], logical_id


def test_function_roles_write_only_their_own_log_group(dev: SynthResult) -> None:
    for attr in SERVICES:
        construct = getattr(dev.stack, attr)
        own = {"Fn::GetAtt": [dev.logical_id(construct.log_group), "Arn"]}
        logs_statements = [
            s
            for s in dev.statements_of_role(dev.logical_id(construct.role))
            if any(a.startswith("logs:") for a in as_list(s["Action"]))
        ]
        assert logs_statements, attr
        for statement in logs_statements:
            assert set(as_list(statement["Action"])) == {"logs:CreateLogStream", "logs:PutLogEvents"}, attr
            assert as_list(statement["Resource"]) == [own], attr


def _invoke_statements(dev: SynthResult, role_logical_id: str) -> list[dict[str, Any]]:
    return [
        s
        for s in dev.statements_of_role(role_logical_id)
        if any(a.startswith("lambda:") or a == "*" for a in as_list(s["Action"]))
    ]


@pytest.mark.parametrize(
    ("caller", "provider"), [("charge", "payment_provider"), ("refund", "payment_provider"), ("ship", "carrier")]
)
def test_sandbox_invoke_grant_exactly_function_arn(dev: SynthResult, caller: str, provider: str) -> None:
    role_id = dev.logical_id(getattr(dev.stack, caller).role)
    provider_arn = {"Fn::GetAtt": [dev.logical_id(getattr(dev.stack, provider).function), "Arn"]}
    statements = _invoke_statements(dev, role_id)
    assert len(statements) == 1, statements
    (statement,) = statements
    assert statement["Effect"] == "Allow"
    assert as_list(statement["Action"]) == ["lambda:InvokeFunction"]
    # The unqualified ARN only: no "<arn>:*" (versions/aliases) and no other function.
    assert as_list(statement["Resource"]) == [provider_arn]


def test_sandbox_payment_invocable_only_by_charge_refund_and_the_sweeper(dev: SynthResult) -> None:
    """The sweeper only looks charges up (order_domain.sweeper); no other function reaches the provider."""
    payment_id = dev.logical_id(present(dev.stack.payment_provider).function)
    allowed = {dev.logical_id(f.role) for f in (dev.stack.charge, dev.stack.refund, dev.stack.sweeper)}
    invokers: set[str] = set()
    for policy in dev.of_type("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if payment_id in str(statement.get("Resource")):
                invokers.update(r["Ref"] for r in policy["Properties"]["Roles"])
    assert invokers == allowed


def test_iam_wildcard_resources_limited_to_unscopable_actions(dev: SynthResult) -> None:
    """What the stack-wide AwsSolutions-IAM5[Resource::*] acknowledgement claims, enforced."""
    for logical_id, policy in dev.of_type("AWS::IAM::Policy").items():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = set(as_list(statement["Action"]))
            assert "*" not in actions and not any(a.endswith(":*") for a in actions), (logical_id, statement)
            if "*" in as_list(statement["Resource"]):
                assert actions <= UNSCOPABLE_ACTIONS, (logical_id, actions - UNSCOPABLE_ACTIONS)


def test_intake_role_may_start_only_the_saga(dev: SynthResult) -> None:
    statements = dev.statements_of_role(dev.logical_id(dev.stack.intake.role))
    states = [s for s in statements if any(a.startswith("states:") for a in as_list(s["Action"]))]
    assert len(states) == 1
    assert as_list(states[0]["Action"]) == ["states:StartExecution"]
    assert as_list(states[0]["Resource"]) == [{"Ref": dev.logical_id(dev.stack.saga.state_machine)}]


# --- DynamoDB and SQS grants ---------------------------------------------------------------------


def _statements_with(dev: SynthResult, role_logical_id: str, prefix: str) -> list[dict[str, Any]]:
    return [
        s for s in dev.statements_of_role(role_logical_id) if any(a.startswith(prefix) for a in as_list(s["Action"]))
    ]


def test_dynamodb_grants_name_table_arns_only(dev: SynthResult) -> None:
    """Explicit statements on the table ARN: no ``<arn>/index/*`` that ``Table.grant*`` would add."""
    tables = set(dev.of_type("AWS::DynamoDB::Table"))
    sweeper_role = dev.logical_id(dev.stack.sweeper.role)
    for logical_id, policy in dev.of_type("AWS::IAM::Policy").items():
        if {"Ref": sweeper_role} in policy["Properties"]["Roles"]:
            continue  # the index grant, checked below
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if not any(a.startswith("dynamodb:") for a in as_list(statement["Action"])):
                continue
            for resource in as_list(statement["Resource"]):
                if set(resource) == {"Fn::Join"}:
                    # Step Functions' DynamoDB integration grants ``arn:...:table/<name>``: the table, no index.
                    parts = resource["Fn::Join"][1]
                    assert parts[-2:-1] == [":table/"] or str(parts[-2]).endswith(":table/"), (logical_id, resource)
                    assert parts[-1] == {"Ref": next(t for t in tables if {"Ref": t} == parts[-1])}, resource
                    continue
                assert set(resource) == {"Fn::GetAtt"}, (logical_id, resource)
                target, attr = resource["Fn::GetAtt"]
                assert (target in tables, attr) == (True, "Arn"), (logical_id, resource)
    assert "/index/" not in json.dumps(
        [p for p in dev.of_type("AWS::IAM::Policy").values() if {"Ref": sweeper_role} not in p["Properties"]["Roles"]]
    )


@pytest.mark.parametrize(
    ("attr", "tables"),
    [
        (
            "reserve",
            {"idempotency_table": DDB_ITEM_RW, "orders_table": DDB_ORDER_STEP, "inventory_table": DDB_TRANSACT},
        ),
        (
            "release",
            {"idempotency_table": DDB_ITEM_RW, "orders_table": DDB_ORDER_STEP, "inventory_table": DDB_TRANSACT},
        ),
        ("charge", {"idempotency_table": DDB_ITEM_RW, "orders_table": DDB_ORDER_STEP}),
        ("refund", {"idempotency_table": DDB_ITEM_RW, "orders_table": DDB_ORDER_STEP}),
        ("ship", {"idempotency_table": DDB_ITEM_RW, "orders_table": DDB_ORDER_STEP}),
        ("finalize", {"idempotency_table": DDB_ITEM_RW, "orders_table": DDB_ORDER_STEP}),
        (
            "intake",
            {
                "idempotency_table": DDB_ITEM_RW,
                # PutItem: attempt 1; UpdateItem: a later payment attempt on the same order
                "orders_table": ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"),
                "failures_table": ("dynamodb:UpdateItem",),
            },
        ),
        # UpdateItem: each automatic run's record, read back by `ops dlq history`
        ("dlq_replay", {"failures_table": ("dynamodb:GetItem", "dynamodb:UpdateItem")}),
        # the settlement record (and the park of a late failure): never put or delete the order
        ("provider_webhook", {"orders_table": DDB_ORDER_STEP}),
        # the sandbox ledger's count_requests() queries the request records
        ("payment_provider", {"ledger_table": (*DDB_TRANSACT, "dynamodb:Query")}),
        # the carrier only puts and reads its own records: it cannot rewrite payment records
        ("carrier", {"ledger_table": ("dynamodb:GetItem", "dynamodb:PutItem")}),
    ],
)
def test_dynamodb_actions_per_role_and_table(dev: SynthResult, attr: str, tables: dict[str, tuple[str, ...]]) -> None:
    granted: dict[str, set[str]] = {}
    for statement in _statements_with(dev, dev.logical_id(getattr(dev.stack, attr).role), "dynamodb:"):
        assert statement["Effect"] == "Allow"
        for resource in as_list(statement["Resource"]):
            granted.setdefault(resource["Fn::GetAtt"][0], set()).update(as_list(statement["Action"]))
    expected = {dev.logical_id(getattr(dev.stack, table)): set(actions) for table, actions in tables.items()}
    assert granted == expected


def test_sweeper_queries_only_the_by_status_and_unsettled_indexes(dev: SynthResult) -> None:
    """Its Query grants are the two indexes, never the table (the sweeper's other grants: tests/infra/test_sweeper.py;
    the unsettled index: tests/infra/test_settlement_infra.py)."""
    role_id = dev.logical_id(dev.stack.sweeper.role)
    orders_id = dev.logical_id(dev.stack.orders_table)
    statements = [s for s in dev.statements_of_role(role_id) if "dynamodb:Query" in as_list(s["Action"])]
    assert all(s["Effect"] == "Allow" and as_list(s["Action"]) == ["dynamodb:Query"] for s in statements)
    resources = sorted(join_to_string(r) for s in statements for r in as_list(s["Resource"]))
    assert resources == [f"ARN<{orders_id}.Arn>/index/by-status", f"ARN<{orders_id}.Arn>/index/unsettled"]


def test_finalize_may_send_to_needs_attention_queue(dev: SynthResult) -> None:
    queue_arn = {"Fn::GetAtt": [dev.logical_id(dev.stack.needs_attention.queue), "Arn"]}
    statements = _statements_with(dev, dev.logical_id(dev.stack.finalize.role), "sqs:")
    assert len(statements) == 1, statements
    (statement,) = statements
    assert "sqs:SendMessage" in as_list(statement["Action"])
    assert not {"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:PurgeQueue"} & set(as_list(statement["Action"]))
    assert as_list(statement["Resource"]) == [queue_arn]


def test_needs_attention_queue_written_only_by_finalize_the_sweeper_and_the_webhook_and_read_by_no_function(
    dev: SynthResult,
) -> None:
    """Humans drain the needs-attention queue: no function role may receive from it. The park
    (finalize), the saga's last-resort route (its state machine role), the sweeper (parks,
    mismatches) and the providers' webhook (a late failure) send to it."""
    queue_id = dev.logical_id(dev.stack.needs_attention.queue)
    dlq_id = dev.logical_id(dev.stack.needs_attention.dlq)
    senders = {
        dev.logical_id(dev.stack.finalize.role),
        dev.logical_id(dev.stack.sweeper.role),
        dev.logical_id(dev.stack.saga.state_machine.role),
        dev.logical_id(dev.stack.provider_webhook.role),
    }
    for policy in dev.of_type("AWS::IAM::Policy").values():
        roles = {r["Ref"] for r in policy["Properties"]["Roles"]}
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            text = json.dumps(statement["Resource"])
            if queue_id in text or dlq_id in text:
                assert dlq_id not in text, statement
                assert roles <= senders, statement
                assert as_list(statement["Action"]) == ["sqs:SendMessage"], statement
