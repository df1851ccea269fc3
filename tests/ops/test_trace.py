"""``ops trace``: every accepted correlation ID is found verbatim (CloudWatch Logs and DLQs on moto)."""

from __future__ import annotations

import contextlib
import itertools
import json
import time

import boto3
import pytest

from ops.cli import main
from ops.target import Target
from ops.trace import filter_term, trace

QUOTED = 'cid "quoted" with space'
GROUPS = ("/aws/lambda/intake", "/aws/lambda/charge")
STACK = "OrderPipeline-dev"


_streams = itertools.count()


def put_lines(group: str, lines: list[dict[str, object]]) -> None:
    """One new stream of JSON lines, stamped now (CloudWatch Logs refuses events older than 14 days)."""
    logs = boto3.client("logs")
    start_ms, stream = int(time.time() * 1000), f"s{next(_streams)}"
    with contextlib.suppress(logs.exceptions.ResourceAlreadyExistsException):
        logs.create_log_group(logGroupName=group)
    logs.create_log_stream(logGroupName=group, logStreamName=stream)
    events = [{"timestamp": start_ms + i, "message": json.dumps(line)} for i, line in enumerate(lines)]
    logs.put_log_events(logGroupName=group, logStreamName=stream, logEvents=events)


def target(**outputs: str) -> Target:
    return Target({"LogGroupNames": ",".join(GROUPS), **outputs}, region="us-east-1")


def test_trace_filter_term_quotes_safe_ids_and_falls_back_for_the_rest() -> None:
    assert filter_term("cid-7-00001-36f675cc") == '"cid-7-00001-36f675cc"'
    assert filter_term(QUOTED) == '"quoted"'  # longest safe run; exact match is done on the parsed line
    assert filter_term('a "b" c') is None  # nothing worth filtering on: read the groups whole
    assert filter_term('x"\\y') is None


def test_trace_quoted_correlation_id_found_verbatim(aws: None) -> None:
    put_lines(GROUPS[0], [{"level": "INFO", "message": "received", "correlation_id": QUOTED, "service": "intake"}])
    put_lines(
        GROUPS[1],
        [
            {"level": "INFO", "message": "charged", "correlation_id": QUOTED, "service": "charge"},
            # shares the filter term and a prefix: must not match
            {"level": "INFO", "message": "other", "correlation_id": QUOTED + " too", "service": "charge"},
            {"level": "INFO", "message": "other", "correlation_id": "cid quoted with space", "service": "charge"},
        ],
    )
    events = trace(target(), QUOTED)
    assert [(e.source, e.text) for e in events] == [("log:intake", "INFO received"), ("log:charge", "INFO charged")]


def test_trace_quoted_correlation_id_in_dlq_record(aws: None) -> None:
    sqs = boto3.client("sqs")
    dlq = sqs.create_queue(QueueName="orders-dlq")["QueueUrl"]
    for cid in (QUOTED, QUOTED + "x"):
        sqs.send_message(
            QueueUrl=dlq,
            MessageBody="[]",
            MessageAttributes={
                "correlation_id": {"DataType": "String", "StringValue": cid},
                "dlq_category": {"DataType": "String", "StringValue": "permanent"},
                "dlq_error_type": {"DataType": "String", "StringValue": "InvalidOrder"},
            },
        )
    events = trace(target(OrdersDlqUrl=dlq), QUOTED)
    assert [(e.source, e.text.split(":")[0]) for e in events] == [("dlq:orders", "permanent InvalidOrder")]


def test_trace_follows_an_id_minted_for_an_out_of_bounds_producer_id(aws: None) -> None:
    producer = "p\x07" * 150  # too long, control characters: intake mints a UUID and keeps this one, escaped
    kept = producer.encode("unicode_escape").decode("ascii")[:256]
    minted = "3b4c76b6-1111-4222-8333-444455556666"
    put_lines(
        GROUPS[0],
        [
            {"level": "INFO", "message": "minted", "correlation_id": minted, "producer_correlation_id": kept},
            {"level": "INFO", "message": "accepted", "correlation_id": minted},
        ],
    )
    put_lines(GROUPS[1], [{"level": "INFO", "message": "charged", "correlation_id": minted}])
    texts = sorted(e.text for e in trace(target(), producer))
    assert texts == ["INFO accepted", "INFO charged", "INFO minted"]


def test_trace_cli_prints_quoted_id_timeline(aws: None, capsys: pytest.CaptureFixture[str]) -> None:
    template = {
        "Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "q"}}},
        "Outputs": {"LogGroupNames": {"Value": ",".join(GROUPS)}},
    }
    boto3.client("cloudformation").create_stack(StackName=STACK, TemplateBody=json.dumps(template))
    put_lines(GROUPS[0], [{"level": "INFO", "message": "received", "correlation_id": QUOTED, "service": "intake"}])
    assert main(["trace", QUOTED, "--json", "--region", "us-east-1"]) == 0
    [event] = json.loads(capsys.readouterr().out)
    assert (event["source"], event["text"]) == ("log:intake", "INFO received")


def test_trace_failure_details_of_function_and_service_integration_tasks() -> None:
    """A status write (DynamoDB integration) fails as TaskFailed: the trace must show its error too."""
    from ops.trace import failure_details

    assert failure_details({"type": "LambdaFunctionFailed", "lambdaFunctionFailedEventDetails": {"error": "X"}}) == {
        "error": "X"
    }
    task = {"type": "TaskFailed", "taskFailedEventDetails": {"error": "DynamoDB.ConditionalCheckFailedException"}}
    assert failure_details(task)["error"] == "DynamoDB.ConditionalCheckFailedException"
    assert failure_details({"type": "TaskTimedOut", "taskTimedOutEventDetails": {"error": "States.Timeout"}})
    assert failure_details({"type": "TaskStateEntered", "stateEnteredEventDetails": {"name": "MarkCompleted"}}) == {}
