"""Make the Lambda layer packages (``lambda_resilience``, ``order_domain``) importable by the ops CLI.

The DLQ and record helpers live with the Lambda code because Lambdas (the replay function)
use them too; the CLI imports the same modules instead of keeping copies.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAMBDAS_DIR = ROOT / "lambdas"
#: Where the middleware package's source lives (installable on its own: packages/lambda_resilience).
MIDDLEWARE_SRC_DIR = ROOT / "packages" / "lambda_resilience" / "src"
LAYER_SOURCE_DIRS = (MIDDLEWARE_SRC_DIR, LAMBDAS_DIR)


def ensure_importable() -> None:
    """Append the layer's source directories to ``sys.path`` (after everything else, like a layer)."""
    for directory in map(str, LAYER_SOURCE_DIRS):
        if directory not in sys.path:
            sys.path.append(directory)
