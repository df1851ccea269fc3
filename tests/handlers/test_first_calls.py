"""Issue 41: the provider outage alarms count a payment or shipping operation's failure once, at its first call
(docs/decisions/0033): a refund the provider keeps refusing, retried by the saga's outage retrier, is one refused
operation, never a rate of failures. The first call is the one whose intent (decision 0028) is newly recorded."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from lambda_resilience.exceptions import TransientStepError
from lambda_resilience.step import DEPENDENCY_FAILURES_METRIC, FIRST_CALL_FAILURES_METRIC, FIRST_CALLS_METRIC
from order_domain.status import OrderStatus

from .conftest import LogCapture

COUNTS = (DEPENDENCY_FAILURES_METRIC, FIRST_CALLS_METRIC, FIRST_CALL_FAILURES_METRIC)


def _totals(logs: LogCapture) -> dict[str, float]:
    return {name: logs.metric_total(name) for name in COUNTS}


def test_refund_refused_on_every_retry_counts_one_first_call_failure(
    charge, refund, order_factory, saga_input, seed_order, lambda_context, logs: LogCapture
) -> None:
    order = order_factory(payment_token="tok_refund_broken")
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    event = saga_input(order, "cid-broken")
    charge(event, lambda_context)
    charged = _totals(logs)
    assert charged == {DEPENDENCY_FAILURES_METRIC: 0, FIRST_CALLS_METRIC: 1, FIRST_CALL_FAILURES_METRIC: 0}

    for _ in range(8):  # the first call and the outage retrier's retries, each refused by the provider
        with pytest.raises(TransientStepError, match="provider_unavailable"):
            refund(event, lambda_context)

    refunded = {name: total - charged[name] for name, total in _totals(logs).items()}
    assert refunded == {DEPENDENCY_FAILURES_METRIC: 8, FIRST_CALLS_METRIC: 1, FIRST_CALL_FAILURES_METRIC: 1}


def test_charge_in_an_outage_counts_its_first_call_once_and_its_rerun_none(
    charge, order_factory, saga_input, seed_order, lambda_context, logs: LogCapture, providers
) -> None:
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    event = saga_input(order, "cid-outage")
    for _ in range(3):  # the provider refuses: the first call, then two retries
        providers.fail_next(ClientError({"Error": {"Code": "TooManyRequestsException", "Message": "busy"}}, "Invoke"))
        with pytest.raises(TransientStepError):
            charge(event, lambda_context)
    charge(event, lambda_context)  # the provider is back: the retry captures

    assert _totals(logs) == {DEPENDENCY_FAILURES_METRIC: 3, FIRST_CALLS_METRIC: 1, FIRST_CALL_FAILURES_METRIC: 1}
