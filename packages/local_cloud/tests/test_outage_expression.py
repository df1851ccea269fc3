"""The provider outage alarm's expression as the emulator evaluates it (docs/decisions/0023): an outage
pages, flaky calls that recover and a quiet minute's failures do not. The expression is the template's
(asserted in tests/infra/test_recall_alarms.py)."""

from __future__ import annotations

import pytest

from local_cloud.alarms import _expression

EXPRESSION = "(FILL(failed0, 0) + FILL(failed1, 0)) - 0.5 * (FILL(invoked0, 0) + FILL(invoked1, 0))"
THRESHOLD = 5


@pytest.mark.parametrize(
    ("failed0", "invoked0", "pages"),
    [
        (60, 60, True),  # an outage: every call of the minute failed (and was retried)
        (4, 100, False),  # flaky refunds that recover on retry
        (3, 3, False),  # a quiet minute's few failures: 100%, under the floor
        (None, None, False),  # no traffic
    ],
)
def test_outage_expression_pages_on_a_share_not_a_count(
    failed0: float | None, invoked0: float | None, pages: bool
) -> None:
    value = _expression(EXPRESSION, {"failed0": failed0, "invoked0": invoked0})
    assert (value is not None and value > THRESHOLD) is pages
