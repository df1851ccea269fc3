"""Entry point for ``python -m ops``."""

import sys

from ops.cli import main

sys.exit(main())
