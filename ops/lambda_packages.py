"""Make the Lambda layer packages (``shared``, ``order_domain``) importable by the ops CLI.

The DLQ and record helpers live with the Lambda code because Lambdas (the replay function)
use them too; the CLI imports the same modules instead of keeping copies.
"""

from __future__ import annotations

import sys
from pathlib import Path

LAMBDAS_DIR = Path(__file__).resolve().parent.parent / "lambdas"


def ensure_importable() -> None:
    """Append ``lambdas/`` to ``sys.path`` (after everything else, like a layer)."""
    if str(LAMBDAS_DIR) not in sys.path:
        sys.path.append(str(LAMBDAS_DIR))
