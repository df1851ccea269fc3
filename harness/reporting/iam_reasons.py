"""Why a grant that a run did not use stays in the stack: one documented reason per kept grant.

The local run reports every granted action no call used (``iam.<principal>.granted_unused``).
A grant with a reason here is kept on purpose (a path this run did not take, or AWS's own use of
the role); anything without one is a candidate for removal. The README's "Least privilege"
table is this list.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

#: (action pattern, resource pattern, reason). Patterns are shell-style, on the resolved ARN.
REASONS: tuple[tuple[str, str, str], ...] = (
    ("dynamodb:DeleteItem", "*IdempotencyTable*", "Powertools deletes the in-progress record when the function raises"),
    ("dynamodb:GetItem", "*IdempotencyTable*", "Powertools reads the record back when a conditional put returns none"),
    ("dynamodb:GetItem", "*OrdersTable*", "reading the order (steps; intake's read-back of a duplicate)"),
    ("dynamodb:UpdateItem", "*OrdersTable*", "status moves; intake records payment attempt N+1 on an existing order"),
    ("dynamodb:UpdateItem", "*FailuresTable*", "intake records a transient or unknown failure before redrive"),
    ("dynamodb:GetItem", "*FailuresTable*", "replay reads a redriven message's category"),
    ("dynamodb:PutItem", "*InventoryTable*", "release writes a tombstone when nothing was reserved"),
    ("dynamodb:GetItem", "*InventoryTable*", "a cancelled reservation transaction is read back to tell why"),
    ("dynamodb:*", "*SandboxLedgerTable*", "the dev sandbox provider's ledger (dev only; never in prod)"),
    ("sqs:SendMessage", "*Dlq*", "a permanent failure is dead-lettered at once"),
    ("sqs:SendMessage", "*NeedsAttentionQueue*", "an order whose compensation kept failing is parked"),
    ("sqs:SendMessage", "*OrdersQueue*", "replay sends DLQ messages back; intake requeues a throttled record"),
    ("sqs:*", "*", "CDK's SqsEventSource grants the consume actions the event source mapping uses"),
    ("lambda:InvokeFunction", "*:*", "aws-stepfunctions-tasks.LambdaInvoke grants the functions' versions and aliases"),
    ("lambda:InvokeFunction", "*Sandbox*", "the dev sandbox provider functions"),
    ("logs:*", "*", "Lambda and Step Functions write the logs with these"),
    ("xray:*", "*", "active tracing: the service writes the segments"),
    ("secretsmanager:GetSecretValue", "*", "the provider API key, read once per container"),
    ("kms:*", "*", "DynamoDB and CloudWatch Logs use the customer-managed key on the caller's behalf (prod)"),
    ("states:StartExecution", "*", "intake starts the saga"),
    ("cloudwatch:PutMetricData", "*", "Powertools Metrics flushes EMF through logs; kept for direct puts"),
)
#: Principals that a run may not invoke at all; their every grant is then unused by design.
SCHEDULED_ONLY = ("DlqReplay", "Sweeper")
#: Invoked by the providers' signed webhook events only (no provider calls the local API): unused in a run.
WEBHOOK_ONLY = ("ProviderWebhook",)


def reason_for(principal: str, action: str, resource: str) -> str | None:
    """The documented reason a grant is kept although this run did not use it, or None."""
    if any(name in principal for name in SCHEDULED_ONLY):
        return "runs on a schedule (and on DLQ alarms); tests/e2e/test_iam.py proves its grants"
    if any(name in principal for name in WEBHOOK_ONLY):
        return (
            "invoked by the providers' signed webhook events only; tests/infra/test_webhook_infra.py bounds its grants"
        )
    for action_pattern, resource_pattern, reason in REASONS:
        if fnmatchcase(action, action_pattern) and fnmatchcase(resource, resource_pattern):
            return reason
    return None


def explain(iam_report: dict[str, Any]) -> dict[str, Any]:
    """``iam_report`` with a ``reason`` on every unused grant and an ``unexplained`` count per principal."""
    out: dict[str, Any] = {}
    for principal, entry in iam_report.items():
        unused = []
        unexplained = 0
        for grant in entry.get("granted_unused", []):
            reasons = {reason_for(principal, grant["action"], r) for r in grant["resources"]}
            reason = next(iter(reasons)) if len(reasons) == 1 else "; ".join(sorted(str(r) for r in reasons))
            if None in reasons:
                unexplained += 1
                reason = None
            unused.append({**grant, "reason": reason})
        out[principal] = {**entry, "granted_unused": unused, "granted_unused_unexplained": unexplained}
    return out
