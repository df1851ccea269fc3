"""The courier saga as its own CDK app, with ResilienceChecks on its stack.

npx cdk synth --app ".venv/bin/python -m examples.courier_saga.app"    (from the repository root: ``-m``
puts it first on the import path, where the library ``constructs_lib`` and ``examples`` are)
"""

from __future__ import annotations

from typing import Any

from aws_cdk import App, Aspects

from constructs_lib.checks import ResilienceChecks
from examples.courier_saga.stack import CourierSagaStack

STACK_NAME = "CourierSaga"


def build_app(context: dict[str, Any] | None = None, outdir: str | None = None) -> App:
    app = App(context=context, outdir=outdir)
    stack = CourierSagaStack(app, STACK_NAME)
    Aspects.of(stack).add(ResilienceChecks())
    return app


if __name__ == "__main__":
    build_app().synth()
