"""Records the saga outcome on the order: COMPLETED, COMPENSATED or NEEDS_ATTENTION."""

from order_domain.settings.finalize import FinalizeSettings
from order_domain.step import build_step_handler
from order_domain.wiring import finalize_action

handler = build_step_handler("finalize-order", finalize_action, FinalizeSettings)
