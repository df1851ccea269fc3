"""Independent engines judge the emulator (docs/engines.md): an IAM simulator (``@cloud-copilot/iam-simulate``)
on the calls a local run makes and on every alarm's publish path, and an Amazon States Language engine
(``aws-local-stepfunctions``) on every path of the saga's state graph. ``python -m harness.engines``.
"""
