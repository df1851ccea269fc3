"""ReleaseInventory (compensation) saga step; as the last compensation it records COMPENSATED itself (decision 0024)."""

from order_domain.outcomes import compensated_by_release
from order_domain.settings.inventory import InventoryStepSettings
from order_domain.step import build_step_handler
from order_domain.wiring import inventory_service, orders

handler = build_step_handler(
    "release-inventory",
    lambda settings: inventory_service(settings).release,
    InventoryStepSettings,
    record_factory=lambda settings: compensated_by_release(orders(settings.orders_table)),
)
