"""Builds the CDK app (shared by app.py, the tests and the local runner)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from aws_cdk import App, Aspects, Environment, Validations
from cdk_nag import AwsSolutionsChecks, PCIDSS321Checks, ServerlessChecks

from constructs_lib.checks import ResilienceChecks
from stacks.nag_suppressions import apply_suppressions
from stacks.order_constructs.stage import StageConfig
from stacks.order_pipeline_stack import OrderPipelineStack

STACK_NAME = "OrderPipeline"


def build_app(context: Mapping[str, Any] | None = None, outdir: str | None = None) -> App:
    """Create the app with the order pipeline stack, checks and cdk-nag attached.

    cdk-nag packs in the gate: AwsSolutions, Serverless and PCI DSS 3.2.1 (acknowledgments in
    ``stacks/nag_suppressions.py``). Raises ``ValueError`` when the context breaks a stage rule
    (``stacks.order_constructs.stage.StageConfig``), before any construct is built.
    """
    app = App(context=dict(context) if context else None, outdir=outdir)
    stage = StageConfig.from_context(app.node)
    env = Environment(account=os.environ.get("CDK_DEFAULT_ACCOUNT"), region=os.environ.get("CDK_DEFAULT_REGION"))
    stack = OrderPipelineStack(app, f"{STACK_NAME}-{stage.name}", stage=stage, env=env)
    apply_suppressions(stack)
    Aspects.of(app).add(ResilienceChecks())
    Validations.of(app).add_plugins(
        AwsSolutionsChecks(app, verbose=True),
        ServerlessChecks(app, verbose=True),
        PCIDSS321Checks(app, verbose=True),
    )
    return app
