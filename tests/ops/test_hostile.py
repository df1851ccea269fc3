"""Hostile input for local runs: what is injected, how its end is classified, the invariants on it."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from moto import mock_aws

from harness.faults.chaos import FaultRates, plan_deliveries
from harness.reporting.invariants import check
from harness.run.run import _batches, body_order_id
from harness.workload import hostile
from harness.workload.orders import PII_PATTERN, OrderMix, make_orders, order_kind
from local_cloud.faults import FaultCounter

INTAKE_MAX_BODY = 65_536


def depth(text: str) -> int:
    """Bracket nesting depth of a JSON text (strings in these bodies hold no brackets)."""
    deepest = level = 0
    for char in text:
        if char in "[{":
            level += 1
            deepest = max(deepest, level)
        elif char in "]}":
            level -= 1
    return deepest


def sample(kind: str, n: int = 20) -> list[hostile.HostileMessage]:
    rng = random.Random(kind)
    made = [hostile.make_hostile(kind, rng) for _ in range(n)]
    assert all(isinstance(m, hostile.HostileMessage) for m in made)
    return [m for m in made if isinstance(m, hostile.HostileMessage)]


def test_hostile_deep_nesting_is_thousands_of_levels_deep() -> None:
    for message in sample("deep_nesting"):
        assert depth(message.body) >= hostile.NESTING_DEPTH
        assert len(message.body.encode()) < INTAKE_MAX_BODY  # refused for its depth, not its size
        with pytest.raises(RecursionError):
            json.loads(message.body)


def _sqs_size(message: hostile.HostileMessage) -> int:
    """Body plus the correlation ID attribute's name, type and value, as SQS counts a message."""
    return len(message.body.encode()) + len("correlation_id") + len("String") + len(message.correlation_id.encode())


def test_hostile_oversize_is_a_valid_looking_order_exactly_at_the_orders_queue_limit() -> None:
    from stacks.order_pipeline_stack import ORDERS_QUEUE_MAX_MESSAGE_BYTES

    for message in sample("oversize", 3):
        assert _sqs_size(message) == ORDERS_QUEUE_MAX_MESSAGE_BYTES  # SQS accepts it ...
        assert len(message.body.encode()) > INTAKE_MAX_BODY  # ... intake must refuse it
        order = json.loads(message.body)
        assert order["order_id"] == message.order_id and order_kind(order) == "ok"


def test_hostile_oversize_refused_is_one_byte_over_the_orders_queue_limit() -> None:
    from stacks.order_pipeline_stack import ORDERS_QUEUE_MAX_MESSAGE_BYTES

    for message in sample(hostile.OVERSIZE_REFUSED, 3):
        assert _sqs_size(message) == ORDERS_QUEUE_MAX_MESSAGE_BYTES + 1
        assert hostile.expected_ends(message.kind) == (hostile.REFUSED_AT_SEND,)


def test_hostile_outcomes_hold_oversize_kinds_to_their_own_end() -> None:
    rng = random.Random(9)
    accepted = hostile.make_hostile("oversize", rng)
    refused = hostile.make_hostile(hostile.OVERSIZE_REFUSED, rng)
    lost = hostile.make_hostile(hostile.OVERSIZE_REFUSED, rng)
    wrong = hostile.make_hostile("oversize", rng)
    assert all(isinstance(m, hostile.HostileMessage) for m in (accepted, refused, lost, wrong))
    found = [dlq(accepted.correlation_id), dlq(lost.correlation_id)]
    ended, misplaced = hostile.outcomes(
        [accepted, refused, lost, wrong],
        found,
        set(),
        {},
        {},
        refused_at_send=[refused.correlation_id, wrong.correlation_id],
    )
    assert ended["oversize"] == {"injected": 2, "dlq_permanent_first_receive": 1, "unexpected_refused_at_send": 1}
    assert ended[hostile.OVERSIZE_REFUSED] == {
        "injected": 2,
        "refused_at_send": 1,
        "unexpected_dlq_permanent_first_receive": 1,
    }
    assert sorted(m["correlation_id"] for m in misplaced) == sorted([lost.correlation_id, wrong.correlation_id])
    failed = {k: v for k, v in check(base_report(hostile=ended, hostile_misplaced=misplaced)).items() if v}
    assert set(failed) == {"hostile_messages_in_dlq_as_permanent_on_first_receive"}


def test_hostile_floats_are_numbers_json_integers_are_not() -> None:
    seen = set()
    for message in sample("floats"):
        item = json.loads(message.body)["items"][0]
        floats = {k: v for k, v in item.items() if isinstance(v, float)}
        assert len(floats) == 1 and floats in ({"quantity": 2.0}, {"unit_price_cents": 1000.0})
        assert '"quantity": 2.0' in message.body or '"unit_price_cents": 1e3' in message.body
        seen.add(next(iter(floats)))
    assert seen == {"quantity", "unit_price_cents"}


def test_hostile_wrong_types_cover_each_variant() -> None:
    shapes = set()
    for message in sample("wrong_types", 40):
        body = json.loads(message.body)
        if body is None or body == []:
            shapes.add(repr(body))
        elif isinstance(body["order_id"], int):
            shapes.add("order_id_number")
        else:
            assert isinstance(body["items"], str)
            shapes.add("items_string")
    assert shapes == {"None", "[]", "order_id_number", "items_string"}


def test_hostile_unknown_order_is_references_only() -> None:
    execution = hostile.make_hostile("unknown_order", random.Random(1))
    assert isinstance(execution, hostile.HostileExecution)
    refs = execution.saga_input()
    assert set(refs) == {"order_id", "payment_attempt", "correlation_id"} and refs["payment_attempt"] == 1
    assert refs["correlation_id"].startswith("cid-hostile-unknown_order-")
    assert hostile.execution_name(execution.order_id, 1) == f"order-{execution.order_id}-attempt-1"


def test_hostile_plan_adds_one_per_order_at_rate_one_and_counts_by_kind() -> None:
    orders = make_orders(50, 3, OrderMix())
    counter = FaultCounter()
    plan = plan_deliveries(orders, FaultRates(hostile=1.0), random.Random(9), counter)
    assert len(plan.hostile) == 50
    by_kind = Counter(h.kind for h in plan.hostile)
    assert set(by_kind) == set(hostile.KINDS)
    assert counter.injected == {f"hostile_{k}": n for k, n in by_kind.items()}
    sent = [cid for _, cid in plan.initial]
    messages = [h for h in plan.hostile if isinstance(h, hostile.HostileMessage)]
    assert len(plan.initial) == 50 + len(messages)
    assert all(m.correlation_id in sent for m in messages)
    assert len(plan.hostile_executions) == by_kind["unknown_order"]


def test_hostile_plan_off_leaves_the_seeded_plan_unchanged() -> None:
    orders = make_orders(40, 5, OrderMix())
    rates = {"duplicate": 0.3, "malformed": 0.2}
    before = plan_deliveries(orders, FaultRates(**rates), random.Random(2), FaultCounter())
    again = plan_deliveries(orders, FaultRates(**rates, hostile=0.0), random.Random(2), FaultCounter())
    assert before.initial == again.initial and before.late == again.late and again.hostile == []


def test_hostile_batches_keep_sqs_batch_under_its_size_limit() -> None:
    big: list[tuple[str, str | None]] = [("x" * 100_000, "cid")] * 3 + [("{}", None)] * 25
    batches = list(_batches(big))
    assert all(len(b) <= 10 and sum(len(body) for body, _ in b) <= 200_000 for b in batches)
    assert sum(len(b) for b in batches) == 28


def test_hostile_body_order_id_never_raises() -> None:
    assert body_order_id("[" * 5000 + "]" * 5000) is None
    assert body_order_id("null") is None and body_order_id("{not json") is None
    assert body_order_id('{"order_id": 7}') == "7"


def dlq(cid: str, category: str = "permanent", receive_count: str = "1", queue: str = "orders") -> tuple[str, Any]:
    message = SimpleNamespace(
        correlation_id=cid, category=category, attributes={"dlq_receive_count": receive_count, "correlation_id": cid}
    )
    return queue, message


def test_hostile_outcomes_say_where_each_ended() -> None:
    rng = random.Random(4)
    deep = [hostile.make_hostile("deep_nesting", rng) for _ in range(4)]
    ghost = [hostile.make_hostile("unknown_order", rng) for _ in range(3)]
    assert all(isinstance(m, hostile.HostileMessage) for m in deep)
    c = [m.correlation_id for m in deep]
    found = [
        dlq(c[0]),
        dlq(c[0], receive_count="2"),  # a second copy (crash after dead-lettering) is fine
        dlq(c[1], category="unknown", receive_count="3"),
        dlq(c[2], receive_count="2"),
    ]
    ids = [str(g.order_id) for g in ghost]
    status = {ids[0]: "FAILED", ids[1]: "FAILED", ids[2]: "SUCCEEDED"}
    ended, misplaced = hostile.outcomes([*deep, *ghost], found, set(), status, {ids[1]: 2})
    assert ended["deep_nesting"] == {
        "injected": 4,
        "dlq_permanent_first_receive": 1,
        "dlq_orders_unknown_receive_3": 1,
        "dlq_orders_permanent_receive_2": 1,
        "not_in_dlq": 1,
    }
    assert ended["unknown_order"] == {
        "injected": 3,
        "execution_failed": 2,
        "execution_succeeded": 1,
        "side_effects": 2,
    }
    assert ended["oversize"] == {"injected": 0, "dlq_permanent_first_receive": 0}
    assert len(misplaced) == 3 + 2
    report = base_report(hostile=ended, hostile_misplaced=misplaced)
    failed = {k: v for k, v in check(report).items() if v}
    assert set(failed) == {
        "hostile_messages_in_dlq_as_permanent_on_first_receive",
        "unknown_order_executions_failed_without_side_effects",
    }
    assert "dlq_orders_unknown_receive_3" in failed["hostile_messages_in_dlq_as_permanent_on_first_receive"]


def base_report(**extra: Any) -> dict[str, Any]:
    """A report on which every other invariant holds."""
    report = {
        "side_effects": {
            "duplicate_charges": 0,
            "duplicate_refunds": 0,
            "duplicate_shipments": 0,
            "duplicate_charge_requests": 0,
            "reservations_outstanding": 0,
        },
        "faults_injected": {},
        "orders": {"in_flight": 0, "lost": 0},
        "malformed_in_dlq_as_permanent": 0,
        "logs": {"without_correlation_id": 0, "longest_line_bytes": 900, "lines_over_16_kib": 0},
        "dlq_alarm_states": {},
        "pii": {"log_lines": 0, "execution_history_events": 0, "dlq_message_attributes": 0, "examples": []},
    }
    report.update(extra)
    return report


def test_hostile_outcomes_forgive_receives_lost_to_a_crashed_batch_only() -> None:
    rng = random.Random(5)
    msgs = [hostile.make_hostile("oversize", rng) for _ in range(3)]
    c = [m.correlation_id for m in msgs]
    # c[0]: one crashed batch, then dead-lettered on receive 2; c[1]: receive 3 after one crash
    # (a receive that ran to the end did not dead-letter it); c[2]: receive 2 with no crash.
    found = [dlq(c[0], receive_count="2"), dlq(c[1], receive_count="3"), dlq(c[2], receive_count="2")]
    ended, misplaced = hostile.outcomes(msgs, found, set(), {}, {}, {c[0]: 1, c[1]: 1})
    assert ended["oversize"] == {
        "injected": 3,
        "dlq_permanent_first_receive": 0,
        hostile.EXPECTED_AFTER_CRASH: 1,
        "dlq_orders_permanent_receive_3": 1,
        "dlq_orders_permanent_receive_2": 1,
    }
    assert [m["correlation_id"] for m in misplaced] == [c[1], c[2]]
    failed = {k: v for k, v in check(base_report(hostile=ended, hostile_misplaced=misplaced)).items() if v}
    assert set(failed) == {"hostile_messages_in_dlq_as_permanent_on_first_receive"}
    only_crashed = {"oversize": {"injected": 1, hostile.EXPECTED_AFTER_CRASH: 1}}
    assert not check(base_report(hostile=only_crashed))["hostile_messages_in_dlq_as_permanent_on_first_receive"]


def test_hostile_invariants_hold_on_a_clean_report() -> None:
    ended = {"floats": {"injected": 2, "dlq_permanent_first_receive": 2}, "unknown_order": {"injected": 0}}
    assert {k: v for k, v in check(base_report(hostile=ended)).items() if v} == {}


def test_hostile_invariants_catch_pii_and_long_lines() -> None:
    report = base_report()
    report["pii"] = {"log_lines": 2, "execution_history_events": 0, "dlq_message_attributes": 1, "examples": ["x"]}
    report["logs"].update(longest_line_bytes=100_300, lines_over_16_kib=1)
    failed = {k: v for k, v in check(report).items() if v}
    assert "'log_lines': 2" in failed["no_payment_token_name_or_address_in_logs_histories_or_dlq_attributes"]
    assert failed["no_log_line_over_16_kib"] == "1 log lines over 16384 bytes (longest 100300)"


def test_hostile_pii_findings_and_line_sizes() -> None:
    findings = hostile.PiiFindings()
    order, _ = make_orders(1, 1, OrderMix())[0]
    findings.scan("log_lines", json.dumps({"message": "ok", "order_id": order["order_id"]}), PII_PATTERN)
    findings.scan("log_lines", json.dumps({"address": order["shipping_address"]}), PII_PATTERN)
    findings.scan("execution_history_events", json.dumps({"input": json.dumps(order)}), PII_PATTERN)
    assert findings.as_dict()["log_lines"] == 1 and findings.as_dict()["execution_history_events"] == 1
    assert hostile.line_sizes(["a" * 16_384, "é" * 8_193, ""]) == {"longest_line_bytes": 16_386, "lines_over_16_kib": 1}


def test_orders_each_carry_their_own_token_name_and_address() -> None:
    orders = [o for o, _ in make_orders(300, 8, OrderMix(decline_rate=0.2, refund_fail_rate=0.1, auth_only_rate=0.1))]
    for field in (
        lambda o: o["payment_token"],
        lambda o: o["shipping_address"]["name"],
        lambda o: o["shipping_address"]["line1"],
    ):
        values = [field(o) for o in orders]
        assert len(set(values)) == 300 and all(PII_PATTERN.search(v) for v in values)
    kinds = Counter(order_kind(o) for o in orders)
    assert {"declined", "refund_fails", "auth_only", "ok"} <= set(kinds)
    assert all(o["payment_token"].startswith("tok_decline_") for o in orders if order_kind(o) == "declined")


# --- the sandbox decides by token prefix and never keeps the token ------------------------------


@pytest.fixture
def ledger() -> Iterator[Any]:
    from lambda_resilience.aws import reset_clients
    from sandbox.ledger import Ledger

    with mock_aws():
        reset_clients()
        boto3.client("dynamodb").create_table(
            TableName="ledger",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        yield Ledger("ledger")
        reset_clients()


@pytest.mark.parametrize(
    ("token", "status"),
    [
        ("tok_ok_0123456789ab", "captured"),
        ("tok_decline_0123456789ab", "declined"),
        ("tok_decline", "declined"),
        ("tok_partial_0123456789ab", "partially_captured"),
        ("tok_auth_only_0123456789ab", "authorized"),
        ("tok_refund_broken_0123456789ab", "captured"),
        ("xtok_decline", "captured"),  # a prefix, not a substring
    ],
)
def test_sandbox_charge_by_token_prefix(ledger: Any, token: str, status: str) -> None:
    from sandbox import payment

    request = {
        "action": "charge",
        "idempotency_key": "k1",
        "order_id": "o1",
        "amount_cents": 1000,
        "payment_token": token,
    }
    answer = payment.handle(request, ledger)
    assert answer["status"] == status
    stored = json.dumps(boto3.client("dynamodb").scan(TableName="ledger")["Items"])
    assert token not in stored and token not in json.dumps(answer)


def test_sandbox_refund_failures_by_token_prefix(ledger: Any) -> None:
    from sandbox import payment

    outcomes = {}
    for token in ("tok_refund_broken_aa", "tok_refund_flaky_bb", "tok_ok_cc"):
        charge = {"action": "charge", "idempotency_key": f"c-{token}", "order_id": token, "amount_cents": 500}
        payment.handle({**charge, "payment_token": token}, ledger)
        refund = {"action": "refund", "idempotency_key": f"r-{token}", "charge_idempotency_key": f"c-{token}"}
        outcomes[token] = [payment.handle(refund, ledger)["status"] for _ in range(3)]
    assert outcomes == {
        "tok_refund_broken_aa": ["error", "error", "error"],
        "tok_refund_flaky_bb": ["error", "error", "refunded"],
        "tok_ok_cc": ["refunded", "refunded", "refunded"],
    }


def test_sandbox_carrier_keeps_no_name_or_address(ledger: Any) -> None:
    from sandbox import carrier

    address = {"name": "Name-0123456789ab", "line1": "Line-0123456789ab Main St", "country": "DE"}
    answer = carrier.handle({"action": "ship", "idempotency_key": "s1", "order_id": "o1", "address": address}, ledger)
    assert answer["status"] == "shipped"
    stored = json.dumps(boto3.client("dynamodb").scan(TableName="ledger")["Items"]) + json.dumps(answer)
    assert not PII_PATTERN.search(stored)
