"""A runbook behind every alarm: each alarm's description ends with a link to its page under
``docs/runbooks/`` (what it means, the first ``ops`` commands, when to escalate) and carries its
severity (``page``: wake someone; ``ticket``: look during working hours), which picks its topic.

The table below is keyed by the alarm's construct path in the stack, its last two segments
(``ChargePayment/ErrorsAlarm``): :func:`route_alarms` fails the synth on an alarm it does not know,
so a new alarm cannot ship without a runbook. The link is ``<runbook_base_url><page>#<anchor>``;
``runbook_base_url`` (CDK context) defaults to the repository-relative ``docs/runbooks/`` and is meant
to be set to where the docs are browsable (e.g. ``https://github.com/<org>/<repo>/blob/main/docs/runbooks/``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from aws_cdk import Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sns as sns

#: The repository folder of the runbooks, and the default ``runbook_base_url``.
RUNBOOK_DIR = "docs/runbooks/"
DEFAULT_RUNBOOK_BASE_URL = RUNBOOK_DIR
#: PutMetricAlarm's limit on AlarmDescription
#: (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html: 0..1024 characters).
MAX_DESCRIPTION = 1024
_BASE_URL = re.compile(r"(https://[^\s/]+/|[A-Za-z0-9_.-]+/)[^\s#?]*")


class Severity(StrEnum):
    """``page``: an order is lost, stalled or wrong now; ``ticket``: a condition to look at, no order at risk yet."""

    PAGE = "page"
    TICKET = "ticket"


@dataclass(frozen=True)
class Runbook:
    """Where an alarm's runbook is (``page`` under docs/runbooks, ``anchor`` a heading in it) and its severity;
    ``via``: the composite alarm it notifies through (it keeps no action itself), or None: its own topic;
    ``silent``: a level nobody is notified of (its arrivals alarm and ParkedOrders page; read with ``ops``)."""

    page: str
    anchor: str
    severity: Severity
    via: str | None = None
    silent: bool = False


#: The composite alarm of the order path: one incident (an order lost, parked, stuck or dead-lettered), one page.
ORDERS_AT_RISK = "OrdersAtRisk"


def _errors(anchor: str, severity: Severity = Severity.PAGE, via: str | None = None) -> Runbook:
    return Runbook("function-errors.md", anchor, severity, via)


def _at_risk(page: str, anchor: str, severity: Severity) -> Runbook:
    """An alarm of the order path: it notifies through :data:`ORDERS_AT_RISK`."""
    return Runbook(page, anchor, severity, ORDERS_AT_RISK)


P, T = Severity.PAGE, Severity.TICKET
#: Every alarm of the stack, by the last two segments of its construct path.
RUNBOOKS: dict[str, Runbook] = {
    "Intake/ErrorsAlarm": _errors("intake", via=ORDERS_AT_RISK),
    "ReserveInventory/ErrorsAlarm": _errors("reserve-inventory", via=ORDERS_AT_RISK),
    "ChargePayment/ErrorsAlarm": _errors("charge-payment", via=ORDERS_AT_RISK),
    "ShipOrder/ErrorsAlarm": _errors("ship-order", via=ORDERS_AT_RISK),
    "CancelShipment/ErrorsAlarm": _errors("cancel-shipment", via=ORDERS_AT_RISK),
    "RefundPayment/ErrorsAlarm": _errors("refund-payment", via=ORDERS_AT_RISK),
    "ReleaseInventory/ErrorsAlarm": _errors("release-inventory", via=ORDERS_AT_RISK),
    "FinalizeOrder/ErrorsAlarm": _errors("finalize-order", via=ORDERS_AT_RISK),
    "DlqReplay/ErrorsAlarm": _errors("dlq-replay", T),
    "Sweeper/ErrorsAlarm": _errors("sweeper"),
    "SandboxPayment/ErrorsAlarm": _errors("sandbox-payment", T),
    "SandboxCarrier/ErrorsAlarm": _errors("sandbox-carrier", T),
    "Intake/ThrottlesAlarm": Runbook("intake-throttles.md", "intake-throttles", T),
    "PaymentOutage/Alarm": Runbook("provider-outage.md", "payment-provider", P),
    "CarrierOutage/Alarm": Runbook("provider-outage.md", "carrier", P),
    # The order path notifies through OrdersAtRisk (one parked order was 1 page + 3 tickets: decision 0030).
    "OrderSaga/ExecutionsFailedAlarm": _at_risk("saga-executions.md", "executions-failed", T),
    "OrderSaga/ExecutionsTimedOutAlarm": _at_risk("saga-executions.md", "executions-timed-out", P),
    "OrderSaga/ExecutionsAbortedAlarm": _at_risk("saga-executions.md", "executions-aborted", T),
    "OrderSaga/ExecutionThrottledAlarm": Runbook("saga-executions.md", "execution-throttled", T),
    "OrdersQueue/DlqDepthAlarm": _at_risk("orders-queue.md", "dlq-depth", T),
    "OrdersQueue/DlqArrivalsAlarm": _at_risk("orders-queue.md", "dlq-arrivals", P),
    "OrdersQueue/OldestMessageAgeAlarm": _at_risk("orders-queue.md", "oldest-message-age", P),
    # A level, silent: the park messages stay in the queue after the orders are repaired (nothing consumes them),
    # so in the composite it held OrdersAtRisk in ALARM for good and the next park notified nobody. A new park
    # pages through its arrival (QueueArrivals) and ParkedOrders, which follows the orders themselves.
    "NeedsAttentionQueue/QueueDepthAlarm": Runbook("needs-attention.md", "queue-depth", T, silent=True),
    "NeedsAttentionQueue/QueueArrivalsAlarm": _at_risk("needs-attention.md", "queue-arrivals", P),
    "NeedsAttentionQueue/DlqDepthAlarm": _at_risk("needs-attention.md", "dlq-depth", T),
    "NeedsAttentionQueue/DlqArrivalsAlarm": _at_risk("needs-attention.md", "dlq-arrivals", P),
    "StuckOrders/StuckOrdersAlarm": _at_risk("stuck-orders.md", "stuck-orders", P),
    "StuckOrders/SideEffectMismatchAlarm": _at_risk("side-effect-mismatch.md", "side-effect-mismatch", P),
    "StuckOrders/SweeperHeartbeatAlarm": Runbook("sweeper-heartbeat.md", "sweeper-heartbeat", P),
    "StuckOrders/ParkedOrdersAlarm": _at_risk("parked-orders.md", "parked-orders", T),
    # A ticket: a deferred order is checked by a later sweep; sustained, reconciliation is under-sized.
    "StuckOrders/SweepDeferredAlarm": Runbook("sweep-deferred.md", "sweep-deferred", T),
    "OrderApi/ApiServerErrorsAlarm": Runbook("api-server-errors.md", "api-server-errors", P),
    # The providers' webhook: a crash pages (every event refused); its 5XX, retried by the provider, a ticket.
    "ProviderWebhook/ErrorsAlarm": _errors("provider-webhook"),
    "ProviderWebhook/WebhookServerErrorsAlarm": Runbook("api-server-errors.md", "webhook-server-errors", T),
}


def check_runbook_base_url(value: str) -> str:
    """``https://host/...`` or a relative path, ending with ``/`` (the page name is appended)."""
    if not _BASE_URL.fullmatch(value) or not value.endswith("/"):
        raise ValueError(
            "runbook_base_url must be an https:// URL or a relative path, ending with '/' "
            f"(e.g. https://github.com/<org>/<repo>/blob/main/docs/runbooks/), got {value!r}"
        )
    return value


def runbook_key(alarm: cloudwatch.Alarm) -> str:
    """``<parent id>/<alarm id>``: the key of :data:`RUNBOOKS`."""
    return f"{alarm.node.scope.node.id}/{alarm.node.id}" if alarm.node.scope else alarm.node.id


def runbook_of(alarm: cloudwatch.Alarm) -> Runbook:
    """The alarm's runbook; a ``ValueError`` (synth fails) for an alarm without one."""
    key = runbook_key(alarm)
    if key not in RUNBOOKS:
        raise ValueError(f"alarm {alarm.node.path} has no runbook: add it to RUNBOOKS and docs/{RUNBOOK_DIR}")
    return RUNBOOKS[key]


def describe(description: str, runbook: Runbook, base_url: str) -> str:
    """``"<severity>: <description> Runbook: <base_url><page>#<anchor>"``, within AlarmDescription's limit."""
    text = f"[{runbook.severity.value}] {description} Runbook: {base_url}{runbook.page}#{runbook.anchor}"
    if len(text) > MAX_DESCRIPTION:
        raise ValueError(f"alarm description over {MAX_DESCRIPTION} characters: {text!r}")
    return text


def route_alarms(stack: Stack, base_url: str, topics: Mapping[Severity, sns.ITopic]) -> dict[str, Runbook]:
    """Every alarm of ``stack``: its description gets its severity and runbook link, and it notifies the
    topic of its severity, on ALARM (and on INSUFFICIENT_DATA where it already did: the sweeper's
    heartbeat, decision 0023), never on OK. Returns ``{alarm path: runbook}``.

    Routing here, not in each construct: the library's constructs (queues, functions, the saga) take one
    topic and know nothing of this app's severities; the table above decides, in one place.

    No OK actions: a deploy creates each alarm in INSUFFICIENT_DATA, "the alarm is then evaluated and its
    state is set appropriately. Any actions associated with the new state are then executed"
    (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html), so every
    alarm's OK action ran at every deploy that created it (about 28 e-mails). An incident's end is read on
    the dashboard or with ``ops``; its start is the one notification."""
    check_runbook_base_url(base_url)
    linked: dict[str, Runbook] = {}
    for construct in stack.node.find_all():
        if not isinstance(construct, cloudwatch.Alarm):
            continue
        runbook = runbook_of(construct)
        cfn = construct.node.default_child
        assert isinstance(cfn, cloudwatch.CfnAlarm)
        what = cfn.alarm_description or ""
        if runbook.via:  # no action of its own: its composite notifies (decision 0030)
            what += f" Notifies through the composite alarm {runbook.via}."
        if runbook.silent:
            what += " Notifies nobody (a level: its arrivals alarm pages)."
        cfn.alarm_description = describe(what, runbook, base_url)
        target = [topics[runbook.severity].topic_arn]
        cfn.alarm_actions = None if runbook.via or runbook.silent else target
        cfn.ok_actions = None
        if stack.resolve(cfn.insufficient_data_actions):
            cfn.insufficient_data_actions = target
        linked[construct.node.path] = runbook
    return linked
