"""CDK stacks: wiring only; constructs live in constructs_lib/, code in lambdas/."""
