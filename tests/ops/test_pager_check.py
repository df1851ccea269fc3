"""``ops pager check`` and ``ops smoke``: a topic with no confirmed subscription reaches nobody (issue 41, point 4).

SNS answers through botocore's Stubber as ListSubscriptionsByTopic does on AWS: a subscription awaiting
confirmation has the ARN ``PendingConfirmation``, up to 100 a page with a ``NextToken``
(https://docs.aws.amazon.com/sns/latest/api/API_ListSubscriptionsByTopic.html).
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from ops.cli import main
from ops.pager_check import MAX_PAGES, PENDING, check_topics, format_checks
from ops.smoke_model import SmokeReport
from ops.smoke_pager import check_subscribers
from ops.target import Target

PAGE = "arn:aws:sns:us-east-1:123456789012:OrderPipeline-prod-AlarmTopic"
TICKET = "arn:aws:sns:us-east-1:123456789012:OrderPipeline-prod-TicketTopic"
PAGERDUTY = "https://events.pagerduty.com/integration/SECRETKEY123/enqueue"


def _sub(topic: str, protocol: str, endpoint: str, *, confirmed: bool) -> dict[str, str]:
    arn = f"{topic}:0f1e2d3c-aaaa-bbbb-cccc-{len(endpoint):012d}" if confirmed else PENDING
    return {
        "SubscriptionArn": arn,
        "Owner": "123456789012",
        "Protocol": protocol,
        "Endpoint": endpoint,
        "TopicArn": topic,
    }


def _stubbed(pages: dict[str, list[list[dict[str, str]]]]) -> tuple[Target, Stubber]:
    sns = boto3.client("sns", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    stubber = Stubber(sns)
    for topic, answers in pages.items():
        for n, subscriptions in enumerate(answers):
            answer: dict[str, Any] = {"Subscriptions": subscriptions}
            if n + 1 < len(answers):
                answer["NextToken"] = f"{topic}-page-{n + 1}"
            expected = {"TopicArn": topic, **({"NextToken": f"{topic}-page-{n}"} if n else {})}
            stubber.add_response("list_subscriptions_by_topic", answer, expected)
    outputs = {"AlarmTopicArn": PAGE, "TicketTopicArn": TICKET}
    return Target(outputs, region="us-east-1", _clients={"sns": sns}), stubber


def test_pager_check_fails_on_a_topic_whose_subscription_awaits_confirmation() -> None:
    target, stubber = _stubbed(
        {
            PAGE: [[_sub(PAGE, "email", "oncall@example.com", confirmed=False)]],
            TICKET: [[_sub(TICKET, "email", "oncall@example.com", confirmed=True)]],
        }
    )
    with stubber:
        checks = check_topics(target)
    page, ticket = checks
    assert (page.severity, page.ok, page.pending) == ("page", False, ["email oncall@example.com"])
    assert ticket.ok
    text = format_checks(checks)
    assert "FAILED: no confirmed subscription on the page topic" in text
    assert "Confirm subscription" in text and f"--topic-arn {PAGE}" in text


def test_pager_check_passes_on_confirmed_subscriptions_across_pages_and_hides_url_secrets() -> None:
    first = [_sub(PAGE, "email", f"person{i}@example.com", confirmed=False) for i in range(100)]
    target, stubber = _stubbed(
        {
            PAGE: [first, [_sub(PAGE, "https", PAGERDUTY, confirmed=True)]],
            TICKET: [[_sub(TICKET, "email", "oncall@example.com", confirmed=True)]],
        }
    )
    with stubber:
        page, ticket = check_topics(target)
        stubber.assert_no_pending_responses()
    assert page.ok and ticket.ok
    assert page.confirmed == ["https events.pagerduty.com"]
    assert "SECRETKEY123" not in format_checks([page, ticket])


def test_pager_check_reads_at_most_max_pages_per_topic() -> None:
    pending = [[_sub(PAGE, "email", "x@example.com", confirmed=False)]] * (MAX_PAGES + 5)
    target, stubber = _stubbed({PAGE: pending[: MAX_PAGES + 1]})
    target = Target({"AlarmTopicArn": PAGE}, region="us-east-1", _clients=target._clients)
    with stubber:
        (page,) = check_topics(target)
    assert page.truncated and not page.ok
    assert len(page.pending) == MAX_PAGES  # MAX_PAGES calls, the last page's NextToken not followed


def test_pager_check_does_not_count_the_smoke_temporary_queue_as_a_person() -> None:
    smoke_queue = "arn:aws:sqs:us-east-1:123456789012:smoke-1a2b3c4d-pager"
    target, stubber = _stubbed({PAGE: [[_sub(PAGE, "sqs", smoke_queue, confirmed=True)]], TICKET: [[]]})
    with stubber:
        page, ticket = check_topics(target)
    assert not page.ok and not ticket.ok


def test_pager_check_cli_exit_status_and_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    target, stubber = _stubbed(
        {
            PAGE: [[_sub(PAGE, "email", "a@example.com", confirmed=False)]],
            TICKET: [[_sub(TICKET, "sqs", "arn:q", confirmed=True)]],
        }
    )
    monkeypatch.setattr("ops.target.Target.from_stack", classmethod(lambda cls, *a, **k: target))
    with stubber:
        code = main(["pager", "check", "--stack", "OrderPipeline-prod", "--json"])
    answer = json.loads(capsys.readouterr().out)
    assert code == 1
    assert [(t["severity"], t["ok"]) for t in answer["topics"]] == [("page", False), ("ticket", True)]


def test_smoke_fails_when_a_topic_has_no_confirmed_subscription() -> None:
    target, stubber = _stubbed(
        {
            PAGE: [[_sub(PAGE, "email", "a@example.com", confirmed=False)]],
            TICKET: [[_sub(TICKET, "sqs", "arn:q", confirmed=True)]],
        }
    )
    report = SmokeReport("run")
    with stubber:
        check_subscribers(target, report)
    failed = {c.name: c.observed for c in report.checks if not c.ok}
    assert list(failed) == ["page path: page topic has a confirmed subscription"]
    assert not report.passed
    assert any("Confirm subscription" in n for n in report.notes)
