"""Builds domain services from settings (one place, so handlers stay three lines).

Each builder imports the modules it needs: a handler's cold start loads only the service it uses.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lambda_resilience.exceptions import ConfigurationError
from order_domain.orders import OrderRepository
from order_domain.settings import Settings

if TYPE_CHECKING:
    from order_domain.https_providers import HttpsJsonClient
    from order_domain.intake import IntakeService
    from order_domain.inventory import InventoryService
    from order_domain.payments import PaymentService
    from order_domain.ports import Carrier, PaymentProvider
    from order_domain.shipping import ShippingService
    from order_domain.sweeper import Sweeper

Action = Callable[[dict[str, Any]], dict[str, Any]]


def _orders(settings: Settings) -> OrderRepository:
    assert settings.orders_table  # guaranteed by Settings.from_env(required=...)
    return OrderRepository(settings.orders_table)


def intake_service(settings: Settings) -> IntakeService:
    from order_domain.intake import IntakeService
    from order_domain.saga_start import SagaStarter

    assert settings.state_machine_arn
    return IntakeService(_orders(settings), SagaStarter(settings.state_machine_arn))


def inventory_service(settings: Settings) -> InventoryService:
    from order_domain.inventory import InventoryService

    assert settings.inventory_table
    return InventoryService(settings.inventory_table, _orders(settings))


def _https(url: str, secret_arn: str | None) -> HttpsJsonClient:
    """The HTTPS client of one provider API, its key read from ``secret_arn`` (imported on use: dev's
    sandbox wiring never loads it)."""
    from order_domain.https_providers import HttpsJsonClient, SecretApiKey

    return HttpsJsonClient(url, SecretApiKey(secret_arn or ""))


def payment_provider(settings: Settings) -> PaymentProvider:
    """The HTTPS adapter when ``PAYMENT_API_URL`` is set (prod always), else the provider function."""
    if settings.payment_api_url:
        from order_domain.https_providers import HttpsPaymentProvider

        return HttpsPaymentProvider(_https(settings.payment_api_url, settings.payment_api_secret_arn))
    if settings.payment_provider_function:
        from order_domain.providers import LambdaPaymentProvider

        return LambdaPaymentProvider(settings.payment_provider_function)
    raise ConfigurationError("set PAYMENT_API_URL (+ PAYMENT_API_SECRET_ARN) or PAYMENT_PROVIDER_FUNCTION")


def carrier(settings: Settings) -> Carrier:
    """The HTTPS adapter when ``CARRIER_API_URL`` is set (prod always), else the carrier function."""
    if settings.carrier_api_url:
        from order_domain.https_providers import HttpsCarrier

        return HttpsCarrier(_https(settings.carrier_api_url, settings.carrier_api_secret_arn))
    if settings.carrier_function:
        from order_domain.providers import LambdaCarrier

        return LambdaCarrier(settings.carrier_function)
    raise ConfigurationError("set CARRIER_API_URL (+ CARRIER_API_SECRET_ARN) or CARRIER_FUNCTION")


def payment_service(settings: Settings) -> PaymentService:
    from order_domain.payments import PaymentService

    return PaymentService(payment_provider(settings), _orders(settings))


def shipping_service(settings: Settings) -> ShippingService:
    from order_domain.shipping import ShippingService

    return ShippingService(carrier(settings), _orders(settings))


def sweeper_service(settings: Settings, logger: Any) -> Sweeper:
    from order_domain.attention import NeedsAttentionNotifier
    from order_domain.sweeper import Sweeper

    assert settings.state_machine_arn
    return Sweeper(
        _orders(settings),
        NeedsAttentionNotifier(settings.needs_attention_queue_url),
        payment_provider(settings),
        carrier(settings),
        state_machine_arn=settings.state_machine_arn,
        stuck_after_seconds=settings.stuck_after_seconds,
        reconcile_window_seconds=settings.reconcile_window_seconds,
        reconcile_max_orders=settings.reconcile_max_orders,
        logger=logger,
    )


def finalize_action(settings: Settings) -> Action:
    from lambda_resilience.correlation import current_correlation_id
    from order_domain.attention import SAGA_PARK, NeedsAttentionNotifier
    from order_domain.status import OrderStatus

    orders = _orders(settings)
    notifier = NeedsAttentionNotifier(settings.needs_attention_queue_url)

    def finalize(payload: dict[str, Any]) -> dict[str, Any]:
        outcome = OrderStatus(payload["outcome"])
        order_id, attempt = payload["order_id"], payload["payment_attempt"]
        error = payload.get("error")
        recorded = {**(error or {}), "correlation_id": current_correlation_id()} if error is not None else None
        if outcome == OrderStatus.NEEDS_ATTENTION:
            # Announce first, then write the status: if the write fails (throttled, denied, an
            # unknown order), the announcement is already out and the retry only repeats it (a
            # duplicate message is harmless). The reverse order could write NEEDS_ATTENTION and
            # then lose the message: a parked order nobody hears about. It announces whatever the
            # write then finds (already NEEDS_ATTENTION included): each execution's park is its own.
            notifier.notify(
                order_id,
                payment_attempt=attempt,
                reason="the saga could not finish or compensate the order",
                error=error,
                source=SAGA_PARK,
            )
        transition = orders.transition(order_id, outcome, attempt=attempt, error=recorded)
        return {"status": outcome.value, "transition": transition}

    return finalize
