"""Every cdk-nag acknowledgment (v3's suppressions) in one place, each with its reason."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import Acknowledgment, Stack, Validations

if TYPE_CHECKING:
    from stacks.order_pipeline_stack import OrderPipelineStack

XRAY_AND_LOG_DELIVERY = (
    "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
    "Only X-Ray's write actions (xray:PutTraceSegments, xray:PutTelemetryRecords, added by active "
    "tracing) and Step Functions' CloudWatch Logs delivery actions (logs:CreateLogDelivery and "
    "friends) use Resource '*': those actions support no resource-level scoping.",
)


def apply_suppressions(stack: OrderPipelineStack) -> None:
    """Acknowledge the reviewed cdk-nag findings on ``stack``."""
    rule_id, reason = XRAY_AND_LOG_DELIVERY
    Validations.of(stack).acknowledge(Acknowledgment(id=rule_id, reason=reason))

    # tasks.LambdaInvoke grants states:... lambda:InvokeFunction on "<fn arn>" and "<fn arn>:*".
    saga_role = stack.saga.state_machine.role
    for step in (stack.reserve, stack.charge, stack.ship, stack.refund, stack.release, stack.finalize):
        logical_id = Stack.of(step).get_logical_id(step.function.node.default_child)  # type: ignore[arg-type]
        Validations.of(saga_role).acknowledge(
            Acknowledgment(
                id=f"AwsSolutions::AwsSolutions-IAM5[Resource::<{logical_id}.Arn>:*]",
                reason="The state machine may invoke its own step functions, including their versions and "
                "aliases (ARN:*); aws-stepfunctions-tasks.LambdaInvoke grants both forms.",
            )
        )
