"""``ops smoke``'s vocabulary: what a run is asked (:class:`SmokeOptions`, the cdk.json context), what it
answers (:class:`SmokeReport` of :class:`Check`), its cases and the state one run keeps (:class:`SmokeRun`)."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ops.errors import UsageError
from ops.target import Target

ROOT = Path(__file__).resolve().parent.parent
SMOKE_SKU = "SKU-SMOKE-TEST"
#: Stock the smoke seeds when its SKU is missing (or holds less than a run needs).
SEED_STOCK = 1000
#: What one run reserves at most (each order takes one unit).
UNITS_PER_RUN = 5
DEFAULT_TIMEOUT_SECONDS = 180.0
#: How long an alarm the smoke set off may take to return to OK after its DLQ message is removed:
#: a 1-minute alarm with missing data not breaching needs one or two periods (CloudWatch
#: evaluates every minute: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html).
DEFAULT_ALARM_WAIT_SECONDS = 180.0
POLL_SECONDS = 1.0
TERMINAL = ("COMPLETED", "COMPENSATED", "NEEDS_ATTENTION")
#: The sandbox's behaviour, by token prefix and country (lambdas/sandbox/__init__.py).
SANDBOX_OK_TOKEN = "tok_ok"
SANDBOX_DECLINE_TOKEN = "tok_decline"
SANDBOX_UNDELIVERABLE_COUNTRY = "ZZ"
#: Outputs only a stack with the sandbox provider has (the deployed stack's; ``ops local up``'s).
SANDBOX_OUTPUTS = ("LedgerTableName", "SandboxLedgerTableName")
CONTEXT_KEYS = {
    "payment_token": "smoke_payment_token",
    "decline_token": "smoke_decline_token",
    "undeliverable_country": "smoke_undeliverable_country",
}


class SmokeUsageError(UsageError):
    """The smoke test cannot run as asked (e.g. real providers without test tokens)."""


@dataclass(frozen=True)
class SmokeOptions:
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    alarm_wait_seconds: float = DEFAULT_ALARM_WAIT_SECONDS
    payment_token: str | None = None
    decline_token: str | None = None
    undeliverable_country: str | None = None
    #: False: every order through SQS even when the stack has the order API (``--no-api``).
    use_api: bool = True
    run_id: str = field(default_factory=lambda: secrets.token_hex(4))
    #: False: skip the page-path check (a stand-in without CloudWatch's alarm actions: unit tests).
    page_path: bool = True
    #: Without the order API, also send the malformed order straight to the orders queue and check intake
    #: dead-letters it as ``permanent`` (``--dead-letter``). On a deployment whose alarms are evaluated it
    #: pages through the orders DLQ alarm: for ``make rehearse`` (MiniStack evaluates no alarm).
    dead_letter: bool = False
    #: Test hook: how to wait between polls (default time.sleep).
    sleep: Callable[[float], None] | None = None


@dataclass(frozen=True)
class Check:
    name: str
    expected: str
    observed: str

    @property
    def ok(self) -> bool:
        return self.expected == self.observed


@dataclass
class SmokeReport:
    run_id: str
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    def check(self, name: str, expected: object, observed: object) -> None:
        self.checks.append(Check(name, str(expected), str(observed)))


@dataclass(frozen=True)
class Case:
    name: str
    order_id: str
    token: str
    country: str = "DE"


class SmokeRun:
    """The state of one smoke run against ``target``; the roles (orders, alarms, cleanup) build on it."""

    def __init__(self, target: Target, options: SmokeOptions) -> None:
        self.target = target
        self.options = options
        self.report = SmokeReport(options.run_id)
        self.sent_message_ids: list[str] = []
        self.seeded_sku = False
        self.started_at = datetime.now(UTC)

    def pause(self, seconds: float) -> None:
        (self.options.sleep or time.sleep)(seconds)


def context_defaults(cdk_json: Path = ROOT / "cdk.json") -> dict[str, str]:
    """The smoke's token settings from cdk.json's context (``smoke_payment_token``...), if any."""
    try:
        context = json.loads(cdk_json.read_text()).get("context", {})
    except (OSError, ValueError):
        return {}
    return {option: str(context[key]) for option, key in CONTEXT_KEYS.items() if context.get(key)}


def format_table(report: SmokeReport) -> str:
    width = max([len(c.name) for c in report.checks] + [5])
    lines = [f"{'check':<{width}}  {'expected':<28}  {'observed':<28}  result"]
    for c in report.checks:
        lines.append(f"{c.name:<{width}}  {c.expected:<28}  {c.observed:<28}  {'ok' if c.ok else 'FAIL'}")
    lines.extend(f"note: {n}" for n in report.notes)
    verdict = "passed" if report.passed else "FAILED"
    lines.append(f"smoke {report.run_id}: {verdict} ({sum(c.ok for c in report.checks)}/{len(report.checks)} checks)")
    return "\n".join(lines)
