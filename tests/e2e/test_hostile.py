"""Hostile input on the local pipeline (``ops local run --hostile-rate``): each kind ends where it must."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.workload.hostile import EXPECTED_SQS_ENDS, KINDS, OVERSIZE_REFUSED, SQS_KINDS, UNKNOWN_ORDER
from local_cloud.template import CloudAssembly

pytestmark = pytest.mark.e2e

HOSTILE_INVARIANTS = (
    "hostile_messages_in_dlq_as_permanent_on_first_receive",
    "unknown_order_executions_failed_without_side_effects",
    "no_payment_token_name_or_address_in_logs_histories_or_dlq_attributes",
    "no_log_line_over_16_kib",
)
#: Seed 4 with 60 orders at rate 0.2 injects every kind at least once (15 hostile inputs).
ARGS = ["--orders", "60", "--seed", "4", "--hostile-rate", "0.2", "--malformed-rate", "0.05", "--check"]


@pytest.fixture(scope="module")
def hostile_run(assembly: CloudAssembly, tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict[str, Any]]:
    report_file = Path(tmp_path_factory.mktemp("hostile")) / "report.json"
    code = main(["local", "run", *ARGS, "--assembly", str(assembly.outdir), "--report-file", str(report_file)])
    return code, json.loads(report_file.read_text())


def test_hostile_run_every_invariant_holds(hostile_run: tuple[int, dict[str, Any]]) -> None:
    code, report = hostile_run
    assert {k: v for k, v in report["invariants"].items() if v} == {} and code == 0
    assert set(HOSTILE_INVARIANTS) <= set(report["invariants"])


def test_hostile_run_reports_each_kind_where_it_ended(hostile_run: tuple[int, dict[str, Any]]) -> None:
    _, report = hostile_run
    ended = report["hostile"]
    assert set(ended) == set(KINDS)
    for kind in SQS_KINDS:
        assert ended[kind]["injected"] >= 1
        assert sum(ended[kind].get(end, 0) for end in EXPECTED_SQS_ENDS) == ended[kind]["injected"]
        assert report["faults_injected"][f"hostile_{kind}"] == ended[kind]["injected"]
    ghosts = ended[UNKNOWN_ORDER]
    assert ghosts["injected"] >= 1 and ghosts["execution_failed"] == ghosts["injected"] and ghosts["side_effects"] == 0
    assert report["hostile_misplaced"] == []


def test_hostile_run_dead_letters_only_hostile_and_malformed_input(hostile_run: tuple[int, dict[str, Any]]) -> None:
    _, report = hostile_run
    sqs_hostile = sum(report["hostile"][k]["injected"] for k in SQS_KINDS if k != OVERSIZE_REFUSED)
    malformed = report["faults_injected"].get("malformed", 0)
    assert report["dlq_categories"]["orders"] == {"permanent": sqs_hostile + malformed}
    assert report["orders"]["submitted"] == report["orders"]["completed"] + report["orders"]["compensated"]
    assert report["executions"]["FAILED"] == report["hostile"][UNKNOWN_ORDER]["injected"]


def test_hostile_run_logs_stay_small_and_free_of_order_data(hostile_run: tuple[int, dict[str, Any]]) -> None:
    _, report = hostile_run
    assert 0 < report["logs"]["longest_line_bytes"] <= 16_384
    pii = report["pii"]
    assert pii["log_lines"] == pii["execution_history_events"] == pii["dlq_message_attributes"] == 0


def test_hostile_correlation_id_with_quotes_and_spaces_traced_end_to_end(assembly: CloudAssembly) -> None:
    import random

    from harness.run.run import RunOptions, local_pipeline
    from harness.workload.orders import make_order
    from ops.trace import trace

    cid = 'cid "quoted" with space'
    with local_pipeline(RunOptions(assembly_dir=assembly.outdir), assembly) as run:
        order = make_order("order-quoted-1", random.Random(1))
        run.submit([(order, cid)])
        run.drain()
        assert run.order_summary()[1][0]["correlation_id"] == cid  # accepted verbatim
        run.ship_logs()
        events = trace(run.target(), cid)
    services = {e.source for e in events if e.source.startswith("log:")}
    # The outcome is written by the saga's own DynamoDB task (no finalize Lambda on the happy path).
    assert {"log:intake", "log:charge-payment", "log:ship-order"} <= services
    assert any(e.source.startswith("execution:order-order-quoted-1-attempt-1") for e in events)


def test_hostile_oversize_at_the_queue_limit_is_dead_lettered_one_byte_over_is_refused_at_send(
    assembly: CloudAssembly,
) -> None:
    """The orders queue's MaximumMessageSize is the contract plus an attribute allowance: a body the
    queue accepts (exactly at its limit, attributes counted) is dead-lettered by intake as permanent
    with its category; one byte more is refused at SendMessage, so the producer learns it at once."""
    import random

    import boto3
    from botocore.exceptions import ClientError

    from harness.run.run import RunOptions, local_pipeline
    from harness.workload.hostile import oversize_body

    with local_pipeline(RunOptions(assembly_dir=assembly.outdir), assembly) as run:
        queue_url = run.target().output("OrdersQueueUrl")
        sqs = boto3.client("sqs")
        limit = int(
            sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["MaximumMessageSize"])["Attributes"][
                "MaximumMessageSize"
            ]
        )
        assert limit == 69_632

        def send(cid: str, over: int) -> None:
            sqs.send_message(
                QueueUrl=queue_url,
                MessageBody=oversize_body(f"big-{over}", random.Random(over), cid, over=over),
                MessageAttributes={"correlation_id": {"DataType": "String", "StringValue": cid}},
            )

        with pytest.raises(ClientError) as refused:
            send("cid-big-over", 1)
        assert refused.value.response["Error"]["Code"] == "InvalidParameterValue"
        assert f"shorter than {limit} bytes" in refused.value.response["Error"]["Message"]

        send("cid-big-at", 0)
        run.drain()
        dlq_url = run.target().output("OrdersDlqUrl")
        (message,) = sqs.receive_message(
            QueueUrl=dlq_url, MessageAttributeNames=["All"], MaxNumberOfMessages=10, VisibilityTimeout=0
        )["Messages"]
        attrs = {k: v["StringValue"] for k, v in message["MessageAttributes"].items()}
        assert (attrs["correlation_id"], attrs["dlq_category"], attrs["dlq_error_type"]) == (
            "cid-big-at",
            "permanent",
            "InvalidOrder",
        )
        assert attrs["dlq_receive_count"] == "1"
        assert len(message["Body"].encode()) > 65_536
