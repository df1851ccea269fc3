"""Entry point for ``python -m harness`` (the workshop: local runs, the fault matrix, the spike, capacity)."""

import sys

from harness.cli import main

sys.exit(main())
