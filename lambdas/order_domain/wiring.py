"""The composition root: builds each function's services from its settings, and their AWS clients.

The only module under ``lambdas/`` that obtains AWS clients. Repositories, services and provider
adapters take a client in their constructor (as Powertools' persistence layers take
``boto3_client``); they are built here, once per execution environment (the handlers call these
builders at module import). :func:`client` is one client per service per execution environment
(:func:`lambda_resilience.aws.client`), shared by every object built here and created on its
first use, not at import: building a client reads its service model (~10 ms at a cold start), and
the cold start loads only what the first invocation runs (``make bench``, import time). The local
emulator patches ``botocore.client.BaseClient._make_api_call`` at class level, so these clients
reach it like any other.

Each builder imports the modules it needs: a handler's cold start loads only the services it uses.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lambda_resilience import aws
from order_domain.orders import OrderRepository

if TYPE_CHECKING:
    from lambda_resilience.backoff import ThrottleBackoff
    from lambda_resilience.dlq import FailureRouting
    from lambda_resilience.idempotency import IdempotentOperation
    from order_domain.https_providers import HttpsJsonClient
    from order_domain.intake import IntakeService
    from order_domain.inventory import InventoryService
    from order_domain.payments import PaymentService
    from order_domain.ports import Carrier, PaymentProvider
    from order_domain.settings import IdempotentSettings
    from order_domain.settings.finalize import FinalizeSettings
    from order_domain.settings.intake import IntakeSettings
    from order_domain.settings.inventory import InventoryStepSettings
    from order_domain.settings.payment import PaymentStepSettings
    from order_domain.settings.providers import HttpsProvider
    from order_domain.settings.shipping import ShippingStepSettings
    from order_domain.settings.sweeper import SweeperSettings
    from order_domain.settings.webhook import WebhookSettings
    from order_domain.shipping import ShippingService
    from order_domain.sweeper import Sweeper
    from order_domain.webhook_endpoint import WebhookEndpoint

Action = Callable[[dict[str, Any]], dict[str, Any]]


class _OnFirstUse:
    """A service's client, created on first use: then the execution environment's shared one."""

    __slots__ = ("_client", "_service")

    def __init__(self, service: str) -> None:
        self._service = service
        self._client: Any = None

    def __getattr__(self, name: str) -> Any:
        if self._client is None:
            self._client = aws.client(self._service)
        return getattr(self._client, name)


def client(service: str) -> Any:
    """The execution environment's client for ``service``, for a constructor (created on first use)."""
    return _OnFirstUse(service)


def orders(table_name: str) -> OrderRepository:
    return OrderRepository(table_name, client=client("dynamodb"))


def idempotency(settings: IdempotentSettings, *, logger: Any, metrics: Any) -> IdempotentOperation:
    """The function's idempotency guard, on the shared DynamoDB client."""
    from lambda_resilience.idempotency import IdempotentOperation

    return IdempotentOperation(
        settings.idempotency_table,
        ttl_seconds=settings.idempotency_ttl_seconds,
        logger=logger,
        metrics=metrics,
        boto3_client=client("dynamodb"),
    )


# -- intake -----------------------------------------------------------------------------------------


def intake_service(settings: IntakeSettings) -> IntakeService:
    from order_domain.intake import IntakeService
    from order_domain.saga_start import SagaStarter

    return IntakeService(
        orders(settings.orders_table), SagaStarter(settings.state_machine_arn, client=client("stepfunctions"))
    )


def failure_routing(settings: IntakeSettings) -> FailureRouting:
    from lambda_resilience.dlq import FailureRouting

    return FailureRouting(settings.dead_letter_queue_url, settings.failures_table, aws.client)


def throttle_backoff(settings: IntakeSettings) -> ThrottleBackoff | None:
    """Requeue throttled records with a delay when the stack set the requeue queue (else None)."""
    if settings.throttle_requeue_queue_url is None:
        return None
    from lambda_resilience.backoff import ThrottleBackoff
    from order_domain.settings.intake import THROTTLE_MAX_DELAY_SECONDS, THROTTLE_MAX_REQUEUES

    return ThrottleBackoff(
        settings.throttle_requeue_queue_url,
        aws.client,
        max_seconds=THROTTLE_MAX_DELAY_SECONDS,
        max_requeues=THROTTLE_MAX_REQUEUES,
    )


# -- providers --------------------------------------------------------------------------------------


def _https(provider: HttpsProvider, sweep_workers: int | None = None) -> HttpsJsonClient:
    """The HTTPS client of one provider API, its key read from the provider's secret (imported on use:
    dev's sandbox wiring never loads it). ``sweep_workers``: None for a step's client (its retries budgeted on
    the step's invocation); for the sweeper's, that many connections kept (one per order reconciled at once)
    and retries budgeted on the sweep's remaining time (order_domain.pacing.sweep_seconds_left)."""
    from order_domain.https_providers import HttpsJsonClient, SecretApiKey

    key = SecretApiKey(provider.secret_arn, client=client("secretsmanager"))
    if sweep_workers is None:
        return HttpsJsonClient(provider.url, key)
    from order_domain.pacing import sweep_seconds_left

    return HttpsJsonClient(provider.url, key, pool_size=sweep_workers, seconds_left=sweep_seconds_left)


def payment_provider(
    settings: PaymentStepSettings | SweeperSettings, sweep_workers: int | None = None
) -> PaymentProvider:
    """The HTTPS adapter when ``PAYMENT_API_URL`` is set (prod always), else the provider function."""
    from order_domain.settings.providers import HttpsProvider

    target = settings.payment
    if isinstance(target, HttpsProvider):
        from order_domain.https_providers import HttpsPaymentProvider

        return HttpsPaymentProvider(_https(target, sweep_workers))
    from order_domain.providers import LambdaPaymentProvider

    return LambdaPaymentProvider(target.function_name, client=client("lambda"))


def carrier(settings: ShippingStepSettings | SweeperSettings, sweep_workers: int | None = None) -> Carrier:
    """The HTTPS adapter when ``CARRIER_API_URL`` is set (prod always), else the carrier function."""
    from order_domain.settings.providers import HttpsProvider

    target = settings.carrier
    if isinstance(target, HttpsProvider):
        from order_domain.https_providers import HttpsCarrier

        return HttpsCarrier(_https(target, sweep_workers))
    from order_domain.providers import LambdaCarrier

    return LambdaCarrier(target.function_name, client=client("lambda"))


# -- saga steps -------------------------------------------------------------------------------------


def inventory_service(settings: InventoryStepSettings) -> InventoryService:
    from order_domain.inventory import InventoryService

    return InventoryService(settings.inventory_table, orders(settings.orders_table), client=client("dynamodb"))


def payment_service(settings: PaymentStepSettings) -> PaymentService:
    from order_domain.payments import PaymentService

    return PaymentService(payment_provider(settings), orders(settings.orders_table))


def shipping_service(settings: ShippingStepSettings) -> ShippingService:
    from order_domain.shipping import ShippingService

    return ShippingService(carrier(settings), orders(settings.orders_table))


def finalize_action(settings: FinalizeSettings) -> Action:
    from lambda_resilience.correlation import current_correlation_id
    from order_domain.attention import SAGA_PARK, NeedsAttentionNotifier
    from order_domain.status import OrderStatus

    repository = orders(settings.orders_table)
    notifier = NeedsAttentionNotifier(settings.needs_attention_queue_url, client=client("sqs"))

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
        transition = repository.transition(order_id, outcome, attempt=attempt, error=recorded)
        return {"status": outcome.value, "transition": transition}

    return finalize


# -- scheduled functions ---------------------------------------------------------------------------


def sweeper_service(settings: SweeperSettings, logger: Any) -> Sweeper:
    from order_domain.attention import NeedsAttentionNotifier
    from order_domain.reconcile_sizing import CAPACITY
    from order_domain.settings.providers import HttpsProvider
    from order_domain.sweeper import Sweeper

    # Orders at once against HTTPS APIs; an in-account provider function (dev's sandbox) would take the
    # account's Lambda concurrency: one at a time.
    # Each worker keeps its connection to each provider (more at once than the pool holds: a new TLS handshake each).
    https = isinstance(settings.payment, HttpsProvider) and isinstance(settings.carrier, HttpsProvider)
    workers = CAPACITY.workers if https else 1
    return Sweeper(
        orders(settings.orders_table),
        NeedsAttentionNotifier(settings.needs_attention_queue_url, client=client("sqs")),
        payment_provider(settings, sweep_workers=workers),
        carrier(settings, sweep_workers=workers),
        state_machine_arn=settings.state_machine_arn,
        stuck_after_seconds=settings.stuck_after_seconds,
        reconcile_window_seconds=settings.reconcile_window_seconds,
        reconcile_max_orders=settings.reconcile_max_orders,
        logger=logger,
        stepfunctions=client("stepfunctions"),
        workers=workers,
    )


def replay_clients() -> Callable[[str], Any]:
    """``client(service)`` for the DLQ replay (the middleware's replay takes a client factory)."""
    return aws.client


class SigningSecrets:
    """The webhook's signing secrets from Secrets Manager (``{"signing_secrets": ["whsec_...", ...]}``), read
    once per container: more than one while a secret is rolled (the provider signs with each)."""

    def __init__(self, secret_arn: str, *, secrets_client: Any) -> None:
        self.secret_arn = secret_arn
        self.client = secrets_client
        self._value: list[str] | None = None

    def __call__(self) -> list[str]:
        if self._value is None:
            import json

            from lambda_resilience.exceptions import ConfigurationError

            text = self.client.get_secret_value(SecretId=self.secret_arn)["SecretString"]
            try:
                found = json.loads(text)["signing_secrets"]
                found = [found] if isinstance(found, str) else found  # the stack's generated placeholder
            except (KeyError, TypeError, ValueError) as exc:
                raise ConfigurationError(f'secret {self.secret_arn} must be {{"signing_secrets": [...]}}') from exc
            if not isinstance(found, list) or not found or not all(isinstance(s, str) and s for s in found):
                raise ConfigurationError(f"secret {self.secret_arn} has no signing secret")
            self._value = found
        return self._value


def webhook_endpoint(settings: WebhookSettings, logger: Any) -> WebhookEndpoint:
    from order_domain.attention import NeedsAttentionNotifier
    from order_domain.webhook_endpoint import WebhookEndpoint

    return WebhookEndpoint(
        orders(settings.orders_table),
        NeedsAttentionNotifier(settings.needs_attention_queue_url, client=client("sqs")),
        SigningSecrets(settings.webhook_secret_arn, secrets_client=client("secretsmanager")),
        logger=logger,
    )
