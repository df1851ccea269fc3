"""The drill's terminal (:mod:`harness.drill.console`): an ``ops`` command's output, exit status and AWS calls,
counted with a botocore ``before-call`` hook on the command's own session (moto answers)."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from harness.drill.console import OpsConsole


@pytest.fixture
def topics(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    for key, value in {
        "AWS_ACCESS_KEY_ID": "x",
        "AWS_SECRET_ACCESS_KEY": "x",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(key, value)
    with mock_aws():
        sns = boto3.client("sns", region_name="us-east-1")
        page, ticket = (sns.create_topic(Name=n)["TopicArn"] for n in ("page", "ticket"))
        sns.subscribe(TopicArn=page, Protocol="email", Endpoint="oncall@example.com")
        yield {"AlarmTopicArn": page, "TicketTopicArn": ticket}


def test_ops_console_counts_each_commands_aws_calls(topics: dict[str, str]) -> None:
    console = OpsConsole(topics, "us-east-1", "OrderPipeline-dev")
    first = console.run("pager", "check", question="does a page reach a person")
    again = console.run("pager", "check")
    assert first.operations == {"SNS.ListSubscriptionsByTopic": 2} and first.calls == 2
    assert again.calls == 2  # counted per command, not accumulated
    assert first.exit_code == 1  # the ticket topic has no subscription
    assert "FAILED: no confirmed subscription on the ticket topic" in first.output
    assert [c.question for c in console.typed] == ["does a page reach a person", ""]
