"""``python -m ops pager check``: does each alarm topic reach a person? (issue 41, point 4)

An alarm that fires into a topic whose only subscription was never confirmed reaches nobody, and nothing else
says so: CloudWatch publishes, SNS accepts, the smoke's own temporary subscriber hears it. This reads each of
the stack's alarm topics (outputs ``AlarmTopicArn``, severity page, and ``TicketTopicArn``, severity ticket)
with SNS ``ListSubscriptionsByTopic`` and fails when a topic has no confirmed subscription. A subscription not
yet confirmed is listed with the subscription ARN ``PendingConfirmation``
(https://docs.aws.amazon.com/sns/latest/api/API_ListSubscriptionsByTopic.html, the ``Subscription`` type:
https://docs.aws.amazon.com/sns/latest/api/API_Subscription.html); SNS deletes an unconfirmed subscription
after 48 hours (https://docs.aws.amazon.com/sns/latest/dg/sns-delete-subscription-topic.html), so a missed
confirmation e-mail leaves the topic with no subscription at all, which fails the same way.

Bounded: ListSubscriptionsByTopic answers up to 100 subscriptions a call and is throttled at 30 calls a second
(the API reference above); the check reads at most :data:`MAX_PAGES` pages per topic (1,000 subscriptions) and
says when it stopped early. ``ops smoke``'s own temporary queue (``smoke-<run>-pager``) is not a person: it is
never counted as confirmed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ops.target import Target

#: The stack's outputs naming its alarm topics, by severity.
TOPICS: tuple[tuple[str, str], ...] = (("page", "AlarmTopicArn"), ("ticket", "TicketTopicArn"))
#: What ListSubscriptionsByTopic answers for a subscription awaiting its endpoint's confirmation.
PENDING = "PendingConfirmation"
#: Pages of ListSubscriptionsByTopic read per topic at most (100 subscriptions each).
MAX_PAGES = 10
#: ``ops smoke``'s temporary subscriber (:mod:`ops.smoke_pager`): a queue, not a person.
_SMOKE_QUEUE = re.compile(r":smoke-[0-9a-f]+-pager$")

HOW_TO_CONFIRM = (
    "to confirm: e-mail: open the 'AWS Notification - Subscription Confirmation' message sent to the address and "
    "choose 'Confirm subscription' (no message, or older than 48 hours: subscribe again with `aws sns subscribe "
    "--topic-arn {topic} --protocol email --notification-endpoint <address>`); HTTPS (PagerDuty, Opsgenie): the "
    "endpoint must visit the SubscribeURL SNS posts to it, or `aws sns confirm-subscription --topic-arn {topic} "
    "--token <token>`; AWS Chatbot subscribes itself, confirmed. See docs/deploy.md, step 6."
)


@dataclass(frozen=True)
class TopicCheck:
    """One topic's subscriptions: confirmed and pending, as ``protocol endpoint`` (secrets in URLs left out)."""

    severity: str
    topic_arn: str
    confirmed: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    #: True when more pages remained after :data:`MAX_PAGES` (the check did not read them).
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return bool(self.confirmed)

    def observed(self) -> str:
        """One line: what reaches a person, what does not yet."""
        parts = [f"{len(self.confirmed)} confirmed"]
        if self.confirmed:
            parts[0] += f" ({', '.join(self.confirmed)})"
        if self.pending:
            parts.append(f"{len(self.pending)} pending confirmation ({', '.join(self.pending)})")
        if self.truncated:
            parts.append(f"stopped after {MAX_PAGES} pages")
        return "; ".join(parts)

    def as_json(self) -> dict[str, Any]:
        return {
            "severity": self.severity,
            "topic_arn": self.topic_arn,
            "ok": self.ok,
            "confirmed": self.confirmed,
            "pending": self.pending,
            "truncated": self.truncated,
        }


def _endpoint(subscription: Mapping[str, Any]) -> str:
    """``protocol endpoint``; an HTTP(S) endpoint by its host only (PagerDuty's URL holds its integration key)."""
    protocol, endpoint = str(subscription.get("Protocol", "?")), str(subscription.get("Endpoint", ""))
    if protocol in ("http", "https"):
        endpoint = urlsplit(endpoint).hostname or "?"
    return f"{protocol} {endpoint}"


def check_topic(target: Target, severity: str, topic_arn: str) -> TopicCheck:
    """One topic, read a page at a time, at most :data:`MAX_PAGES` calls."""
    sns = target.client("sns")
    check = TopicCheck(severity, topic_arn)
    token: str | None = None
    for _ in range(MAX_PAGES):
        kwargs = {"TopicArn": topic_arn, **({"NextToken": token} if token else {})}
        answer = sns.list_subscriptions_by_topic(**kwargs)
        for subscription in answer.get("Subscriptions", []):
            if subscription.get("Protocol") == "sqs" and _SMOKE_QUEUE.search(str(subscription.get("Endpoint"))):
                continue
            pending = subscription.get("SubscriptionArn") == PENDING
            (check.pending if pending else check.confirmed).append(_endpoint(subscription))
        token = answer.get("NextToken")
        if not token:
            return check
    return TopicCheck(severity, topic_arn, check.confirmed, check.pending, truncated=True)


def check_topics(target: Target) -> list[TopicCheck]:
    """Every alarm topic the stack names; a stack that names none is one failed check (nothing to page)."""
    checks = [
        check_topic(target, severity, target.outputs[output])
        for severity, output in TOPICS
        if target.outputs.get(output)
    ]
    return checks or [TopicCheck("page", "(no AlarmTopicArn output)")]


def format_checks(checks: list[TopicCheck]) -> str:
    lines = []
    for c in checks:
        lines.append(f"{c.severity:<6}  {'ok' if c.ok else 'FAIL':<4}  {c.topic_arn}: {c.observed()}")
        if not c.ok:
            lines.append(f"        {HOW_TO_CONFIRM.format(topic=c.topic_arn)}")
    failed = [c.severity for c in checks if not c.ok]
    verdict = f"FAILED: no confirmed subscription on the {', '.join(failed)} topic" if failed else "passed"
    lines.append(f"pager check: {verdict}")
    return "\n".join(lines)
