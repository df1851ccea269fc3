"""ReleaseInventory (compensation) saga step."""

from order_domain.settings.inventory import InventoryStepSettings
from order_domain.step import build_step_handler
from order_domain.wiring import inventory_service

handler = build_step_handler(
    "release-inventory", lambda settings: inventory_service(settings).release, InventoryStepSettings
)
