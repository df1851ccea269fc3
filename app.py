#!/usr/bin/env python3
"""CDK entry point: one stack, synth-time resilience checks and cdk-nag AwsSolutions."""

from aws_cdk import App

from stacks.app_builder import build_app

app: App = build_app()
app.synth()
