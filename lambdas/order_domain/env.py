"""The environment variable names the order functions read: defined once, here.

The stack's constructs set them (``stacks/``) and the functions' settings read them
(:mod:`order_domain.settings`); both import these constants, so a rename cannot leave one side behind.
Plain string constants, no imports: importing this module costs nothing at a cold start or at synth.
"""

from __future__ import annotations

from typing import Final

IDEMPOTENCY_TABLE_NAME: Final = "IDEMPOTENCY_TABLE_NAME"
IDEMPOTENCY_TTL_SECONDS: Final = "IDEMPOTENCY_TTL_SECONDS"
ORDERS_TABLE_NAME: Final = "ORDERS_TABLE_NAME"
INVENTORY_TABLE_NAME: Final = "INVENTORY_TABLE_NAME"
LEDGER_TABLE_NAME: Final = "LEDGER_TABLE_NAME"
FAILURES_TABLE_NAME: Final = "FAILURES_TABLE_NAME"
STATE_MACHINE_ARN: Final = "STATE_MACHINE_ARN"
PAYMENT_PROVIDER_FUNCTION: Final = "PAYMENT_PROVIDER_FUNCTION"
CARRIER_FUNCTION: Final = "CARRIER_FUNCTION"
#: HTTPS provider adapters: ``<prefix>_URL`` and ``<prefix>_SECRET_ARN`` (constructs_lib.providers).
PAYMENT_API_PREFIX: Final = "PAYMENT_API"
CARRIER_API_PREFIX: Final = "CARRIER_API"
PAYMENT_API_URL: Final = f"{PAYMENT_API_PREFIX}_URL"
PAYMENT_API_SECRET_ARN: Final = f"{PAYMENT_API_PREFIX}_SECRET_ARN"
CARRIER_API_URL: Final = f"{CARRIER_API_PREFIX}_URL"
CARRIER_API_SECRET_ARN: Final = f"{CARRIER_API_PREFIX}_SECRET_ARN"
NEEDS_ATTENTION_QUEUE_URL: Final = "NEEDS_ATTENTION_QUEUE_URL"
DEAD_LETTER_QUEUE_URL: Final = "DEAD_LETTER_QUEUE_URL"
THROTTLE_REQUEUE_QUEUE_URL: Final = "THROTTLE_REQUEUE_QUEUE_URL"
REPLAY_TARGETS: Final = "REPLAY_TARGETS"
STUCK_AFTER_SECONDS: Final = "STUCK_AFTER_SECONDS"
RECONCILE_WINDOW_SECONDS: Final = "RECONCILE_WINDOW_SECONDS"
RECONCILE_MAX_ORDERS: Final = "RECONCILE_MAX_ORDERS"
#: The providers' webhook endpoint: the Secrets Manager secret holding its signing secrets
#: (``{"signing_secrets": ["whsec_..."]}``; order_domain.webhook_endpoint).
WEBHOOK_SECRET_ARN: Final = "WEBHOOK_SECRET_ARN"
