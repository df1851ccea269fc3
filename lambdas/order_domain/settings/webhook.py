"""The providers' webhook endpoint's settings."""

from __future__ import annotations

from typing import NamedTuple


class WebhookSettings(NamedTuple):
    """The webhook endpoint: the orders it settles, where late failures are announced, its signing secrets."""

    orders_table: str
    needs_attention_queue_url: str
    webhook_secret_arn: str
