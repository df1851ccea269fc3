"""Sandbox carrier provider (a stand-in for the third-party API), ledgered."""

from sandbox import carrier
from sandbox.function import provider_handler

handler = provider_handler(carrier.PROVIDER, carrier.handle)
