"""Per-function settings (order_domain.settings): required variables are checked once, by name."""

from __future__ import annotations

import pytest

from lambda_resilience.exceptions import ConfigurationError
from order_domain import env as names
from order_domain.settings import DEFAULT_IDEMPOTENCY_TTL_SECONDS, load
from order_domain.settings.finalize import FinalizeSettings
from order_domain.settings.intake import IntakeSettings
from order_domain.settings.payment import PaymentStepSettings
from order_domain.settings.providers import HttpsProvider, ProviderFunction
from order_domain.settings.replay import DlqReplaySettings
from order_domain.settings.sweeper import SweeperSettings
from sandbox.settings import SandboxSettings

BASE = {names.IDEMPOTENCY_TABLE_NAME: "idem", names.ORDERS_TABLE_NAME: "orders"}


@pytest.mark.parametrize(
    ("settings", "env", "missing"),
    [
        (IntakeSettings, {**BASE}, names.STATE_MACHINE_ARN),
        (
            IntakeSettings,
            {names.ORDERS_TABLE_NAME: "orders", names.STATE_MACHINE_ARN: "arn"},
            names.IDEMPOTENCY_TABLE_NAME,
        ),
        (FinalizeSettings, {**BASE, names.NEEDS_ATTENTION_QUEUE_URL: "  "}, names.NEEDS_ATTENTION_QUEUE_URL),
        (DlqReplaySettings, {}, names.REPLAY_TARGETS),
        (SandboxSettings, {}, names.LEDGER_TABLE_NAME),
    ],
)
def test_settings_missing_required_variable_is_named(settings, env, missing):
    with pytest.raises(ConfigurationError, match=f"environment variable {missing} is required"):
        load(settings, env)


def test_settings_intake_optional_resources_are_none_when_unset():
    loaded = load(IntakeSettings, {**BASE, names.STATE_MACHINE_ARN: "arn", names.THROTTLE_REQUEUE_QUEUE_URL: ""})

    assert loaded.throttle_requeue_queue_url is None and loaded.dead_letter_queue_url is None
    assert loaded.idempotency_ttl_seconds == DEFAULT_IDEMPOTENCY_TTL_SECONDS


@pytest.mark.parametrize(("ttl", "message"), [("3599", "below one hour"), ("soon", "must be an integer")])
def test_settings_idempotency_ttl_below_an_hour_or_not_a_number_is_refused(ttl, message):
    with pytest.raises(ConfigurationError, match=message):
        load(PaymentStepSettings, {**BASE, names.PAYMENT_PROVIDER_FUNCTION: "pay", names.IDEMPOTENCY_TTL_SECONDS: ttl})


def test_settings_provider_url_wins_over_the_function_and_needs_its_secret():
    env = {**BASE, names.PAYMENT_API_URL: "https://pay.example.com", names.PAYMENT_PROVIDER_FUNCTION: "pay"}
    with pytest.raises(ConfigurationError, match=names.PAYMENT_API_SECRET_ARN):
        load(PaymentStepSettings, env)

    loaded = load(PaymentStepSettings, {**env, names.PAYMENT_API_SECRET_ARN: "arn:secret"})
    assert loaded.payment == HttpsProvider("https://pay.example.com", "arn:secret")


def test_settings_sweeper_without_any_carrier_is_refused():
    env = {
        names.ORDERS_TABLE_NAME: "orders",
        names.STATE_MACHINE_ARN: "arn",
        names.NEEDS_ATTENTION_QUEUE_URL: "q",
        names.PAYMENT_PROVIDER_FUNCTION: "pay",
    }
    with pytest.raises(ConfigurationError, match=f"set {names.CARRIER_API_URL} .* or {names.CARRIER_FUNCTION}"):
        load(SweeperSettings, env)

    loaded = load(SweeperSettings, {**env, names.CARRIER_FUNCTION: "ship", names.STUCK_AFTER_SECONDS: "60"})
    assert (loaded.payment, loaded.carrier, loaded.stuck_after_seconds) == (
        ProviderFunction("pay"),
        ProviderFunction("ship"),
        60,
    )


def test_settings_replay_targets_must_be_a_list_of_queue_pairs():
    with pytest.raises(ConfigurationError, match="REPLAY_TARGETS must be a JSON list"):
        load(DlqReplaySettings, {names.REPLAY_TARGETS: '[{"dlq_url": "d"}]'})

    loaded = load(DlqReplaySettings, {names.REPLAY_TARGETS: '[{"dlq_url": "d", "source_url": "s"}]'})
    assert loaded.replay_targets == (("d", "s"),) and loaded.failures_table is None
