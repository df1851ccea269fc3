"""CDK stacks: wiring only; constructs live in packages/constructs_lib/src/constructs_lib/, code in lambdas/."""
