"""Sandbox payment provider (a stand-in for the third-party API), ledgered."""

from sandbox import payment
from sandbox.function import provider_handler

handler = provider_handler(payment.PROVIDER, payment.handle)
