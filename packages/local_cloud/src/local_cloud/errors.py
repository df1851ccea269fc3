"""The emulator's own exception for a caller's mistake (a wrong quota name or value, an unknown region class)."""

from __future__ import annotations


class LocalCloudError(Exception):
    """A caller's mistake the emulator detected; the message says what to do."""


class UsageError(LocalCloudError, ValueError):
    """An option value is invalid (a quota, a scale, a region class)."""
