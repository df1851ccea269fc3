"""The order functions' grants by use: named actions on named resources, defined once.

Each set is proven by the local run's IAM check (README "Least privilege"): the emulator enforces
every function's policy, so a missing action fails ``make e2e``. CDK's ``Table.grant*`` /
``Queue.grant*`` are not used: they add actions (``GetQueueUrl``, ``<table>/index/*``, KMS
wildcards) that nothing here calls.
"""

from __future__ import annotations

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sqs as sqs

#: Powertools' idempotency layer: conditional put, read-back, update to COMPLETED, and delete of the
#: in-progress record when the function raises.
DDB_IDEMPOTENCY = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")
#: Saga steps read the order and move its status with conditional updates; they never put or delete it.
DDB_ORDER_STEP = ("dynamodb:GetItem", "dynamodb:UpdateItem")
#: Reservations: read, transactional put/update (no ConditionCheck items), tombstone put.
DDB_INVENTORY = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem")
DDB_READ_ONLY = frozenset(
    {"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:ConditionCheckItem"}
)
#: What a DynamoDB caller needs on a table's customer-managed key (DynamoDB calls KMS on the caller's
#: behalf, ``kms:ViaService``): named actions, no ``GenerateDataKey*`` / ``ReEncrypt*`` wildcards.
KMS_FOR_DDB_READ = ("kms:Decrypt", "kms:DescribeKey")
KMS_FOR_DDB_WRITE = ("kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey")


def grant_key_use(table: dynamodb.ITable, grantee: iam.IGrantable, actions: tuple[str, ...]) -> None:
    """With a customer-managed key, DynamoDB callers need the key too: decrypt to read, encrypt to write."""
    key = table.encryption_key
    if key is None:
        return
    kms_actions = KMS_FOR_DDB_READ if set(actions) <= DDB_READ_ONLY else KMS_FOR_DDB_WRITE
    grantee.grant_principal.add_to_principal_policy(
        iam.PolicyStatement(actions=list(kms_actions), resources=[key.key_arn])
    )


def grant_items(table: dynamodb.ITable, grantee: iam.IGrantable, *actions: str) -> None:
    """Item actions on the table itself only (``Table.grant`` would add ``<arn>/index/*``), plus its key."""
    grantee.grant_principal.add_to_principal_policy(
        iam.PolicyStatement(actions=list(actions), resources=[table.table_arn])
    )
    grant_key_use(table, grantee, actions)


def grant_index_query(table: dynamodb.ITable, index_name: str, grantee: iam.IGrantable) -> None:
    """``dynamodb:Query`` on one index of ``table`` (and the key's read actions)."""
    grantee.grant_principal.add_to_principal_policy(
        iam.PolicyStatement(actions=["dynamodb:Query"], resources=[f"{table.table_arn}/index/{index_name}"])
    )
    grant_key_use(table, grantee, ("dynamodb:Query",))


def grant_queue(queue: sqs.IQueue, grantee: iam.IGrantable, *actions: str) -> None:
    """Named queue actions only: CDK's ``grant_send_messages`` / ``grant_consume_messages`` add
    ``GetQueueUrl`` and ``GetQueueAttributes``, which nothing here calls (URLs come from the
    environment). Queues use SQS-managed encryption, so no key grant is needed."""
    grantee.grant_principal.add_to_principal_policy(
        iam.PolicyStatement(actions=list(actions), resources=[queue.queue_arn])
    )
