"""``python -m harness.engines [cdk.out cdk.out.prod]``: both engines against the emulator (make engines);
``python -m harness.engines record [cdk.out]``: record a local run's calls for the IAM simulator."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from harness.engines import record, run

if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["record"]:
        record.main(Path(args[1] if len(args) > 1 else "cdk.out"))
        raise SystemExit(0)
    dev, prod = (Path(a) for a in (args or ["cdk.out", "cdk.out.prod"]))
    code = run.main(dev, prod, Path(".build/engines"))
    # Tearing down the interpreter (three moto backends' objects) took about 9 s of make test's time; nothing is
    # left to write: leave at once.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
