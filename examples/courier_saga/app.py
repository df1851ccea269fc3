"""The courier saga as its own CDK app.

npx cdk synth --app ".venv/bin/python examples/courier_saga/app.py"    (from the repository root)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from aws_cdk import App

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:  # run as a script: the library (constructs_lib) is at the root
    sys.path.insert(0, str(REPO_ROOT))

from examples.courier_saga.stack import CourierSagaStack  # noqa: E402

STACK_NAME = "CourierSaga"


def build_app(context: dict[str, Any] | None = None, outdir: str | None = None) -> App:
    app = App(context=context, outdir=outdir)
    CourierSagaStack(app, STACK_NAME)
    return app


if __name__ == "__main__":
    build_app().synth()
