"""The smoke's orders: tokens and cases for this deployment, the SKU's stock, sending (SQS or the order API),
what the API refuses at the edge, and waiting for each order's end (its row, the orders DLQ)."""

from __future__ import annotations

import json
import secrets
import time
from contextlib import suppress
from typing import Any

import order_domain.env as env_names
from ops.order_api import OrderApiClient, api_base_url
from ops.smoke_model import (
    POLL_SECONDS,
    SANDBOX_DECLINE_TOKEN,
    SANDBOX_OK_TOKEN,
    SANDBOX_OUTPUTS,
    SANDBOX_UNDELIVERABLE_COUNTRY,
    SEED_STOCK,
    SMOKE_SKU,
    TERMINAL,
    UNITS_PER_RUN,
    Case,
    SmokeRun,
    SmokeUsageError,
)


class SmokeOrders(SmokeRun):
    """Setting up, sending and waiting for the smoke's orders."""

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
        from ops.dlq import peek

        while True:
            for message in peek(self.target, self.target.output("OrdersDlqUrl")):
                if message.correlation_id == correlation_id:
                    return message
            if time.monotonic() > deadline:
                return None
            self.pause(POLL_SECONDS)

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
        from ops.dlq import peek

        row = self.order(f"smoke-{self.options.run_id}-{name.replace(' ', '-')}")
        dead = [m for m in peek(self.target, self.target.output("OrdersDlqUrl")) if m.correlation_id == correlation_id]
        observed = "order row" if row else ("dead-lettered" if dead else "nowhere")
        self.report.check(f"{name}: reached the pipeline", "nowhere", observed)
