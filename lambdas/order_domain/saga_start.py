"""Starting the saga exactly once per order: the execution name is derived from the order ID."""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from shared.aws import client, error_code

EXECUTION_PREFIX = "order-"


def execution_name(order_id: str) -> str:
    """Deterministic execution name. Standard workflows refuse a second execution with the same
    name for 90 days after the first one closes, which is our saga-start deduplication window."""
    return f"{EXECUTION_PREFIX}{order_id}"[:80]


class SagaStarter:
    def __init__(self, state_machine_arn: str) -> None:
        self.state_machine_arn = state_machine_arn

    def start(self, order: dict[str, Any], correlation_id: str) -> dict[str, Any]:
        """Start (or find) the order's execution; an existing execution counts as success."""
        name = execution_name(order["order_id"])
        saga_input = {"order_id": order["order_id"], "correlation_id": correlation_id, "order": order}
        try:
            response = client("stepfunctions").start_execution(
                stateMachineArn=self.state_machine_arn, name=name, input=json.dumps(saga_input)
            )
            return {"execution_arn": response["executionArn"], "already_started": False}
        except ClientError as exc:
            if error_code(exc) != "ExecutionAlreadyExists":
                raise
            arn = self.state_machine_arn.replace(":stateMachine:", ":execution:") + f":{name}"
            return {"execution_arn": arn, "already_started": True}
