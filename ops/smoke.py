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

The roles, one module each: :mod:`ops.smoke_model` (options, report, cases), :mod:`ops.smoke_provider`
(the payment port), :mod:`ops.smoke_orders`, :mod:`ops.smoke_alarms`, :mod:`ops.smoke_cleanup`; this
module runs them in order.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from datetime import UTC, datetime
from typing import Any

from ops.smoke_alarms import SmokeAlarms
from ops.smoke_cleanup import SmokeCleanup
from ops.smoke_model import (
    SMOKE_SKU,
    Case,
    SmokeOptions,
    SmokeReport,
    SmokeUsageError,
    context_defaults,
    format_table,
)
from ops.smoke_orders import SmokeOrders
from ops.smoke_provider import charge_function_environment, layer_clients, payment_port
from ops.target import Target

#: What callers import from here (the CLI, the tests; ``payment_port`` is looked up here at run time).
__all__ = [
    "SMOKE_SKU",
    "Smoke",
    "SmokeOptions",
    "SmokeReport",
    "SmokeUsageError",
    "charge_function_environment",
    "context_defaults",
    "format_table",
    "payment_port",
    "run_smoke",
]


class Smoke(SmokeOrders, SmokeAlarms, SmokeCleanup):
    """One smoke run against ``target`` (see the module docstring for what it does)."""

    # --- the run -----------------------------------------------------------------------------------
    def run(self) -> SmokeReport:
        from ops.smoke_pager import PageWatch, check_subscribers

        if self.options.page_path:
            check_subscribers(self.target, self.report)
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


def _expected_charges(case: str) -> str:
    return {
        "good": "captured, none",
        "duplicate": "captured, none",
        "declined": "declined, captured, none",
        "undeliverable": "captured, none",
    }[case]


def run_smoke(target: Target, options: SmokeOptions) -> SmokeReport:
    return Smoke(target, options).run()
