#!/usr/bin/env python3
"""CDK entry point: one stack, synth-time resilience checks and cdk-nag (three packs).

A context that breaks a stage rule (e.g. ``-c stage=prod`` without the provider keys or
``alarm_email``) ends synth with one line naming the problem and a non-zero exit, not a traceback.
"""

import sys

from stacks.app_builder import build_app


def main() -> int:
    try:
        app = build_app()
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    app.synth()
    return 0


if __name__ == "__main__":
    sys.exit(main())
