"""Operator mistakes: one exception type, raised where the mistake is detected.

``ops.cli.main`` turns an :class:`OpsError` (and botocore's credential, region and endpoint
errors) into one line on stderr, ``python -m ops: error: <message>``, and exit status 2.
Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class OpsError(Exception):
    """An operator mistake: a wrong name, value or setting. The message says what to do."""


class UsageError(OpsError, ValueError):
    """A command-line value is invalid (a rate, a count, a category, a queue name)."""


class InvalidRates(UsageError):
    """Rates outside 0..1, or shares of one population adding up to more than 1."""
