"""``python -m ops smoke``: after a deploy, does the pipeline work? For any deployment.

Against MiniStack (``make rehearse``), ``ops local up`` or a real account alike: resource names
come from the stack's outputs (:class:`ops.target.Target`), the provider is asked through the
pipeline's own payment port (:mod:`order_domain.wiring`, built from the charge function's
environment), so the smoke test sees what the saga sees.

The mix (each order one item of the dedicated smoke SKU, IDs ``smoke-<run>-<case>``):

- ``good``: completes; its charge is captured once.
- ``declined``: declined, compensated; then payment attempt 2 with a good token completes.
- ``undeliverable``: the carrier refuses it; refunded, released, compensated.
- ``malformed``: refused at the edge (``POST /orders`` answers 400) and never enqueued, so never
  dead-lettered: the smoke's orders never page. Without the order API it is sent straight to the queue only
  with ``--dead-letter`` (intake dead-letters it as ``permanent``, which pages where alarms are evaluated).
- ``duplicate``: the same message sent twice: completes, one charge.

When the stack has the order API (output ``OrderApiUrl``), ``good`` and both ``duplicate`` sends
go through ``POST /orders`` (SigV4-signed, :mod:`ops.order_api`) and must answer 202 with the
correlation ID sent; an order without ``currency`` must be refused at the edge (400 naming the
field) and never reach the pipeline; ``GET /orders/{id}`` of ``good`` must show it ``COMPLETED``
with none of its customer data.

Then: the SKU's stock moved by exactly the completed orders' quantities, no order has more than
one captured charge (the provider's lookup by each attempt's idempotency key), and no alarm of the
stack (alarms whose actions name the stack's alarm topic) that was not in ALARM before is left in
ALARM once the smoke's DLQ message (``--dead-letter`` only) is removed, and no page reached the alarm
topic's subscribers while the smoke ran (:class:`ops.smoke_pager.PageWatch`) before the forced one.
The smoke removes what it created: its orders, its reservations, its DLQ message and failure record,
and the SKU if it seeded it. Idempotency records
expire by their TTL; executions and the providers' own records stay (they are the audit trail).

Tokens: by default the sandbox's (``tok_ok_...``, ``tok_decline_...``, country ``ZZ``; see
lambdas/sandbox/__init__.py). A stack wired to real providers (``PAYMENT_API_URL``) needs the
provider's test-mode tokens: ``--payment-token`` / ``--decline-token`` (or the context keys
``smoke_payment_token`` / ``smoke_decline_token`` in cdk.json), and the undeliverable case only
runs with ``--undeliverable-country`` (a carrier test mode's refusing country).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

import order_domain.env as env_names
from ops.errors import UsageError
from ops.order_api import OrderApiClient, api_base_url
from ops.target import Target, TargetError
from order_domain.settings import load

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


def context_defaults(cdk_json: Path = ROOT / "cdk.json") -> dict[str, str]:
    """The smoke's token settings from cdk.json's context (``smoke_payment_token``...), if any."""
    try:
        context = json.loads(cdk_json.read_text()).get("context", {})
    except (OSError, ValueError):
        return {}
    return {option: str(context[key]) for option, key in CONTEXT_KEYS.items() if context.get(key)}


def _layer() -> Any:
    import lambda_resilience.aws as aws

    return aws


def charge_function_environment(target: Target) -> dict[str, str]:
    """The environment of this stack's charge function (the one whose orders table is the stack's)."""
    orders_table = target.output("OrdersTableName")
    for page in target.client("lambda").get_paginator("list_functions").paginate():
        for function in page["Functions"]:
            env = (function.get("Environment") or {}).get("Variables") or {}
            if env.get(env_names.ORDERS_TABLE_NAME) != orders_table:
                continue
            if env.get(env_names.PAYMENT_API_URL) or env.get(env_names.PAYMENT_PROVIDER_FUNCTION):
                return dict(env)
    raise TargetError(f"no function of this stack has the payment provider's settings (orders table {orders_table})")


def payment_port(target: Target, env: dict[str, str]) -> Any:
    """The pipeline's own PaymentProvider adapter (its AWS calls go through :func:`layer_clients`)."""
    _layer()
    from order_domain.settings.payment import PaymentStepSettings
    from order_domain.wiring import payment_provider

    return payment_provider(load(PaymentStepSettings, env))


@contextmanager
def layer_clients(target: Target) -> Iterator[None]:
    """Within: the layer's shared clients for Lambda and Secrets Manager are ``target``'s.

    The layer's client factory (lambda_resilience.aws.client) takes no endpoint or profile; the
    adapter must reach the same deployment as every other call here. The previous clients are put
    back on exit (``ops local up`` runs handlers in-process, which share that cache).
    """
    aws = _layer()
    services = ("lambda", "secretsmanager")
    with aws._lock:
        saved = {service: aws._clients.get(service) for service in services}
        for service in services:
            aws._clients[service] = target.client(service)
    try:
        yield
    finally:
        with aws._lock:
            for service, previous in saved.items():
                if previous is None:
                    aws._clients.pop(service, None)
                else:
                    aws._clients[service] = previous


@dataclass(frozen=True)
class Case:
    name: str
    order_id: str
    token: str
    country: str = "DE"


class Smoke:
    """One smoke run against ``target`` (see the module docstring for what it does)."""

    def __init__(self, target: Target, options: SmokeOptions) -> None:
        self.target = target
        self.options = options
        self.report = SmokeReport(options.run_id)
        self.sent_message_ids: list[str] = []
        self.seeded_sku = False
        self.started_at = datetime.now(UTC)

    def pause(self, seconds: float) -> None:
        (self.options.sleep or time.sleep)(seconds)

    # --- setup ---------------------------------------------------------------------------------
    def sandbox(self, env: dict[str, str]) -> bool:
        """The sandbox provider answers: as a function (dev) or over HTTP on loopback (``ops local up``)."""
        outputs = self.target.outputs
        return bool(env.get(env_names.PAYMENT_PROVIDER_FUNCTION)) or any(k in outputs for k in SANDBOX_OUTPUTS)

    def tokens(self, env: dict[str, str]) -> tuple[str, str, str | None]:
        """(good token, declining token, undeliverable country or None) for this deployment."""
        o = self.options
        if self.sandbox(env):  # the sandbox provider: its own token prefixes
            marker = secrets.token_hex(6)
            return (
                o.payment_token or f"{SANDBOX_OK_TOKEN}_{marker}",
                o.decline_token or f"{SANDBOX_DECLINE_TOKEN}_{marker}",
                o.undeliverable_country or SANDBOX_UNDELIVERABLE_COUNTRY,
            )
        if not (o.payment_token and o.decline_token):
            raise SmokeUsageError(
                "this stack uses a real payment provider: pass its test-mode tokens with --payment-token and "
                "--decline-token (or the cdk.json context keys smoke_payment_token / smoke_decline_token)"
            )
        return o.payment_token, o.decline_token, o.undeliverable_country

    def cases(self, good: str, decline: str, undeliverable: str | None) -> list[Case]:
        prefix = f"smoke-{self.options.run_id}"
        out = [
            Case("good", f"{prefix}-good", good),
            Case("declined", f"{prefix}-declined", decline),
            Case("duplicate", f"{prefix}-duplicate", good),
        ]
        if undeliverable:
            out.append(Case("undeliverable", f"{prefix}-undeliverable", good, undeliverable))
        else:
            self.report.notes.append("undeliverable case skipped: no --undeliverable-country for a real carrier")
        return out

    def stock(self) -> int | None:
        item = (
            self.target.client("dynamodb")
            .get_item(
                TableName=self.target.output("InventoryTableName"),
                Key={"pk": {"S": f"sku#{SMOKE_SKU}"}},
                ConsistentRead=True,
            )
            .get("Item")
        )
        return None if item is None else int(item["available"]["N"])

    def seed_stock(self) -> int:
        available = self.stock()
        if available is not None and available >= UNITS_PER_RUN:
            return available
        self.target.client("dynamodb").put_item(
            TableName=self.target.output("InventoryTableName"),
            Item={"pk": {"S": f"sku#{SMOKE_SKU}"}, "available": {"N": str(SEED_STOCK)}},
        )
        self.seeded_sku = True
        return SEED_STOCK

    def alarms_in_alarm(self) -> set[str]:
        """Names of the stack's alarms (actions to its alarm topic) now in ALARM."""
        topic = self.target.outputs.get("AlarmTopicArn")
        names = set()
        paginator = self.target.client("cloudwatch").get_paginator("describe_alarms")
        for page in paginator.paginate(StateValue="ALARM"):
            for alarm in page.get("MetricAlarms", []) + page.get("CompositeAlarms", []):
                if topic is None or topic in alarm.get("AlarmActions", []):
                    names.add(alarm["AlarmName"])
        return names

    def alarms_raised_since(self, started: datetime) -> set[str]:
        """The stack's alarms that went to ALARM since ``started`` (alarm history), as far as it is kept."""
        names: set[str] = set()
        try:
            pages = (
                self.target.client("cloudwatch")
                .get_paginator("describe_alarm_history")
                .paginate(HistoryItemType="StateUpdate", StartDate=started, EndDate=datetime.now(UTC))
            )
            for page in pages:
                for item in page.get("AlarmHistoryItems", []):
                    if item.get("HistorySummary", "").endswith("to ALARM"):
                        names.add(item["AlarmName"])
        except Exception:  # an endpoint without alarm history (an emulator): nothing to add to the notes
            return set()
        topic_alarms = self._stack_alarm_names()
        return names & topic_alarms if topic_alarms else names

    def _stack_alarm_names(self) -> set[str]:
        topic = self.target.outputs.get("AlarmTopicArn")
        names = set()
        for page in self.target.client("cloudwatch").get_paginator("describe_alarms").paginate():
            for alarm in page.get("MetricAlarms", []) + page.get("CompositeAlarms", []):
                if topic is None or topic in alarm.get("AlarmActions", []):
                    names.add(alarm["AlarmName"])
        return names

    # --- sending and waiting ---------------------------------------------------------------------
    def order_body(self, case: Case, attempt: int = 1, token: str | None = None) -> dict[str, Any]:
        return {
            "order_id": case.order_id,
            "customer_id": f"smoke-{self.options.run_id}",
            "currency": "EUR",
            "payment_token": token or case.token,
            "payment_attempt": attempt,
            "items": [{"sku": SMOKE_SKU, "quantity": 1, "unit_price_cents": 100}],
            "shipping_address": {
                "name": "Smoke Test",
                "line1": "1 Test Street",
                "city": "Berlin",
                "postcode": "10115",
                "country": case.country,
            },
        }

    def correlation_id(self, name: str, attempt: int = 1) -> str:
        return f"smoke-{self.options.run_id}-{name}-{attempt}"

    def send(self, body: dict[str, Any] | str, correlation_id: str) -> None:
        response = self.target.client("sqs").send_message(
            QueueUrl=self.target.output("OrdersQueueUrl"),
            MessageBody=body if isinstance(body, str) else json.dumps(body),
            MessageAttributes={"correlation_id": {"DataType": "String", "StringValue": correlation_id}},
        )
        self.sent_message_ids.append(response["MessageId"])

    def api(self) -> OrderApiClient | None:
        """A signed client of the stack's order API, or None when the stack has none."""
        base_url = api_base_url(self.target)
        if base_url is not None and not self.options.use_api:
            self.report.notes.append("the order API was not exercised (--no-api): every order went through SQS")
            return None
        return None if base_url is None else OrderApiClient(self.target, base_url)

    def post(self, api: OrderApiClient, case: Case, label: str) -> None:
        """``POST /orders`` with the case's body; checks the 202 and the echoed correlation ID."""
        cid = self.correlation_id(case.name)
        answer = api.post_order(json.dumps(self.order_body(case)).encode(), f"{case.order_id}:1", cid)
        echoed = answer.header("X-Correlation-Id")
        observed = f"{answer.status}, " + ("cid echoed" if echoed == cid else f"cid {echoed!r}")
        self.report.check(f"{label}: POST /orders", "202, cid echoed", observed)
        with suppress(ValueError, KeyError, TypeError):
            self.sent_message_ids.append(str(json.loads(answer.body)["message_id"]))

    def refused_at_edge(self, api: OrderApiClient, good: Case) -> str:
        """An order without ``currency``: the API must refuse it (400 naming the field); its correlation ID."""
        case = Case("no-currency", f"smoke-{self.options.run_id}-no-currency", good.token)
        body = self.order_body(case)
        del body["currency"]
        cid = self.correlation_id(case.name)
        answer = api.post_order(json.dumps(body).encode(), f"{case.order_id}:1", cid)
        names = "names currency" if "currency" in answer.body else "does not name currency"
        self.report.check("no currency: POST /orders", "400, names currency", f"{answer.status}, {names}")
        return cid

    def check_status_api(self, api: OrderApiClient, case: Case) -> None:
        """``GET /orders/{id}``: the order's status, and none of its customer data."""
        answer = api.get_order(case.order_id)
        try:
            status = json.loads(answer.body).get("status")
        except (ValueError, AttributeError):
            status = "unreadable"
        address = self.order_body(case)["shipping_address"]
        customer = {"payment_token": case.token, **{f"address {k}": v for k, v in address.items() if k != "country"}}
        leaked = sorted(name for name, value in customer.items() if str(value) in answer.body)
        shown = "no customer data" if not leaked else "shows " + ", ".join(leaked)  # names only, never values
        self.report.check(
            f"{case.name}: GET /orders/{{id}}",
            "200, COMPLETED, no customer data",
            f"{answer.status}, {status}, {shown}",
        )

    def order(self, order_id: str) -> dict[str, Any] | None:
        item = (
            self.target.client("dynamodb")
            .get_item(
                TableName=self.target.output("OrdersTableName"), Key={"order_id": {"S": order_id}}, ConsistentRead=True
            )
            .get("Item")
        )
        if item is None:
            return None
        return {"status": item.get("status", {}).get("S"), "attempt": int(item.get("payment_attempt", {}).get("N", 0))}

    def wait_terminal(self, wanted: dict[str, int], deadline: float) -> dict[str, dict[str, Any] | None]:
        """Poll until each order is terminal at its wanted payment attempt, or the deadline passes."""
        seen: dict[str, dict[str, Any] | None] = {}
        while True:
            for order_id, attempt in wanted.items():
                state = seen.get(order_id)
                if state is None or state["status"] not in TERMINAL or state["attempt"] < attempt:
                    seen[order_id] = self.order(order_id)
            done = all(
                (s := seen[o]) is not None and s["status"] in TERMINAL and s["attempt"] >= a for o, a in wanted.items()
            )
            if done or time.monotonic() > deadline:
                return seen
            self.pause(POLL_SECONDS)

    def dead_lettered(self, correlation_id: str, deadline: float) -> Any:
        """The orders DLQ's message with ``correlation_id`` (a DlqMessage), or None by the deadline."""
        from ops.dlq import failures_table, lambda_dlq_module

        dlq = lambda_dlq_module()
        while True:
            for message in dlq.peek(
                self.target.client, self.target.output("OrdersDlqUrl"), failures_table(self.target)
            ):
                if message.correlation_id == correlation_id:
                    return message
            if time.monotonic() > deadline:
                return None
            self.pause(POLL_SECONDS)

    # --- the run -----------------------------------------------------------------------------------
    def run(self) -> SmokeReport:
        from ops.smoke_pager import PageWatch

        watch = PageWatch(self.target, self.options.run_id) if self.options.page_path else None
        with watch or nullcontext():
            self._run_orders()
            if watch is not None:
                pages = watch.pages()
                self.report.check("pages by the smoke's own orders", "none", ", ".join(pages) or "none")
                page = watch.forced_page(self.pause)
                self.report.check("page path: forced alarm reaches the topic's subscribers", *page)
        return self.report

    def _run_orders(self) -> None:
        env = charge_function_environment(self.target)
        good, decline, undeliverable = self.tokens(env)
        port = payment_port(self.target, env)
        cases = self.cases(good, decline, undeliverable)
        alarms_before = self.alarms_in_alarm()
        self.started_at = datetime.now(UTC)
        stock_before = self.seed_stock()
        deadline = time.monotonic() + self.options.timeout_seconds
        malformed_cid = self.correlation_id("malformed")
        api, edge_cids = self.api(), []
        by_api = ("good", "duplicate") if api else ()
        try:
            for case in cases:
                if api and case.name in by_api:
                    self.post(api, case, case.name)
                else:
                    self.send(self.order_body(case), self.correlation_id(case.name))
            duplicate = next(c for c in cases if c.name == "duplicate")
            if api:
                self.post(api, duplicate, "duplicate (again, same key)")
                edge_cids = [(self.refused_at_edge(api, cases[0]), "no currency")]
            else:
                self.send(self.order_body(duplicate), self.correlation_id(duplicate.name))
            malformed_sent = self.send_malformed(api, malformed_cid, edge_cids)
            declined = next(c for c in cases if c.name == "declined")
            first = self.wait_terminal({declined.order_id: 1}, deadline)[declined.order_id]
            self.report.check("declined: attempt 1", "COMPENSATED", (first or {}).get("status", "missing"))
            self.send(self.order_body(declined, attempt=2, token=good), self.correlation_id(declined.name, 2))
            wanted = {c.order_id: (2 if c is declined else 1) for c in cases}
            states = self.wait_terminal(wanted, deadline)
            expected = {"good": "COMPLETED", "declined": "COMPLETED", "duplicate": "COMPLETED"}
            expected["undeliverable"] = "COMPENSATED"
            completed = 0
            for case in cases:
                state = states.get(case.order_id) or {}
                observed = f"{state.get('status', 'missing')} (attempt {state.get('attempt', '-')})"
                self.report.check(
                    f"{case.name}: final status", f"{expected[case.name]} (attempt {wanted[case.order_id]})", observed
                )
                completed += state.get("status") == "COMPLETED"
            if malformed_sent:
                message = self.dead_lettered(malformed_cid, deadline)
                self.report.check(
                    "malformed: orders DLQ category", "permanent", message.category if message else "not found"
                )
            if api and edge_cids:
                self.check_status_api(api, cases[0])
                for cid, name in edge_cids:
                    self._check_not_enqueued(cid, name)
            with layer_clients(self.target):
                self._check_charges(port, cases, wanted)
            stock_after = self.stock()
            self.report.check(
                "smoke SKU stock taken", completed, "missing" if stock_after is None else stock_before - stock_after
            )
        finally:
            self.cleanup(cases, malformed_cid)
        self._check_alarms(alarms_before)

    def send_malformed(self, api: OrderApiClient | None, cid: str, edge_cids: list[tuple[str, str]]) -> bool:
        """The malformed order: POSTed (the API must refuse it) or, with ``--dead-letter`` only, sent to the
        queue (intake dead-letters it, which pages). True when it went to the queue."""
        body = json.dumps({"order_id": f"smoke-{self.options.run_id}-malformed", "items": "not a list"})
        if api is not None:
            answer = api.post_order(body.encode(), f"smoke-{self.options.run_id}-malformed:1", cid)
            self.report.check("malformed: POST /orders", "400", str(answer.status))
            edge_cids.append((cid, "malformed"))
            return False
        if not self.options.dead_letter:
            self.report.notes.append(
                "malformed case skipped: without the order API to refuse it, it would be dead-lettered and page "
                "through the orders DLQ alarm (--dead-letter sends it, where alarms are not evaluated)"
            )
            return False
        self.send(body, cid)
        return True

    def _check_not_enqueued(self, correlation_id: str, name: str) -> None:
        """What the API refused reached neither an order row nor the DLQ."""
        from ops.dlq import failures_table, lambda_dlq_module

        row = self.order(f"smoke-{self.options.run_id}-{name.replace(' ', '-')}")
        dead = [
            m
            for m in lambda_dlq_module().peek(
                self.target.client, self.target.output("OrdersDlqUrl"), failures_table(self.target)
            )
            if m.correlation_id == correlation_id
        ]
        observed = "order row" if row else ("dead-lettered" if dead else "nowhere")
        self.report.check(f"{name}: reached the pipeline", "nowhere", observed)

    def _check_charges(self, port: Any, cases: list[Case], wanted: dict[str, int]) -> None:
        from lambda_resilience.idempotency.config import business_key

        duplicates = []
        for case in cases:
            statuses = []
            for attempt in range(1, wanted[case.order_id] + 2):  # one attempt past the last: nothing there
                charge = port.find_charge(business_key(case.order_id, "charge-payment", attempt))
                statuses.append(charge.status if charge else "none")
            self.report.check(f"{case.name}: charges by attempt", _expected_charges(case.name), ", ".join(statuses))
            if statuses.count("captured") > 1:
                duplicates.append(case.name)
        self.report.check("duplicate charges", "none", ", ".join(duplicates) or "none")

    def _check_alarms(self, before: set[str]) -> None:
        deadline = time.monotonic() + self.options.alarm_wait_seconds
        while True:
            left = sorted(self.alarms_in_alarm() - before)
            if not left or time.monotonic() > deadline:
                break
            self.pause(5 * POLL_SECONDS)
        self.report.check("alarms left in ALARM by the smoke", "none", ", ".join(left) or "none")
        raised = sorted(self.alarms_raised_since(self.started_at) - before)
        if raised:
            self.report.notes.append(f"went to ALARM during the smoke (and cleared): {', '.join(raised)}")
        if before:
            self.report.notes.append(f"already in ALARM before the smoke: {', '.join(sorted(before))}")

    # --- cleanup -------------------------------------------------------------------------------------
    def cleanup(self, cases: list[Case], malformed_cid: str) -> None:
        """Remove what this run created (each step on its own: one failure does not stop the rest)."""
        dynamodb = self.target.client("dynamodb")
        for step in self._cleanup_steps(cases, malformed_cid, dynamodb):
            try:
                step()
            except Exception as exc:  # best effort: report, keep cleaning
                self.report.notes.append(f"cleanup: {type(exc).__name__}: {exc}")

    def _cleanup_steps(self, cases: list[Case], malformed_cid: str, dynamodb: Any) -> Iterator[Callable[[], Any]]:
        orders_table, inventory = self.target.output("OrdersTableName"), self.target.output("InventoryTableName")
        for case in cases:
            yield partial(self._remove_if_ended, dynamodb, orders_table, inventory, case.order_id)
        yield partial(self._remove_dead_letter, malformed_cid)
        if self.seeded_sku:
            yield partial(dynamodb.delete_item, TableName=inventory, Key={"pk": {"S": f"sku#{SMOKE_SKU}"}})

    def _remove_if_ended(self, dynamodb: Any, orders_table: str, inventory: str, order_id: str) -> None:
        """Delete the order's row and reservations only if it ended (COMPLETED or COMPENSATED): an
        order still in flight (or parked) may hold money or stock, and its row is what lets the saga,
        the sweeper or an operator finish it (a conditional delete: no read-then-delete race)."""
        try:
            dynamodb.delete_item(
                TableName=orders_table,
                Key={"order_id": {"S": order_id}},
                ConditionExpression="attribute_not_exists(order_id) OR #s IN (:completed, :compensated)",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":completed": {"S": "COMPLETED"}, ":compensated": {"S": "COMPENSATED"}},
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            self.report.notes.append(
                f"cleanup: order {order_id} is still in flight or parked: its row is kept (the saga or the "
                "sweeper finishes it; check it with the order status API or the needs-attention queue)"
            )
            return
        for attempt in (1, 2):
            key = {"pk": {"S": f"reservation#{order_id}#attempt-{attempt}"}}
            dynamodb.delete_item(TableName=inventory, Key=key)

    def _remove_dead_letter(self, correlation_id: str) -> None:
        from ops.dlq import failures_table, lambda_dlq_module

        table = failures_table(self.target)
        dlq_url = self.target.output("OrdersDlqUrl")
        for message in lambda_dlq_module().peek(self.target.client, dlq_url, table):
            if message.correlation_id == correlation_id:
                self.target.client("sqs").delete_message(QueueUrl=dlq_url, ReceiptHandle=message.receipt_handle)
                if table:
                    for message_id in {message.message_id, *self.sent_message_ids}:
                        self.target.client("dynamodb").delete_item(
                            TableName=table, Key={"message_id": {"S": message_id}}
                        )


def _expected_charges(case: str) -> str:
    return {
        "good": "captured, none",
        "duplicate": "captured, none",
        "declined": "declined, captured, none",
        "undeliverable": "captured, none",
    }[case]


def format_table(report: SmokeReport) -> str:
    width = max([len(c.name) for c in report.checks] + [5])
    lines = [f"{'check':<{width}}  {'expected':<28}  {'observed':<28}  result"]
    for c in report.checks:
        lines.append(f"{c.name:<{width}}  {c.expected:<28}  {c.observed:<28}  {'ok' if c.ok else 'FAIL'}")
    lines.extend(f"note: {n}" for n in report.notes)
    verdict = "passed" if report.passed else "FAILED"
    lines.append(f"smoke {report.run_id}: {verdict} ({sum(c.ok for c in report.checks)}/{len(report.checks)} checks)")
    return "\n".join(lines)


def run_smoke(target: Target, options: SmokeOptions) -> SmokeReport:
    return Smoke(target, options).run()
