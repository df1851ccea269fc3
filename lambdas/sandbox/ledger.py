"""The sandbox ledger table: operation records (one per idempotency key) and request records."""

from __future__ import annotations

import time
import uuid
from typing import Any

import boto3
from botocore.exceptions import ClientError

from lambda_resilience.aws import error_code, from_item, to_item

OP_SK = "op"


class Ledger:
    """``pk=op#<provider>#<key>, sk=op``: the operation; ``pk=req#<provider>#<key>, sk=<time>#<uuid>``: a request."""

    def __init__(self, table_name: str, *, client: Any | None = None) -> None:
        """``client``: the DynamoDB client; by default the ledger builds its own (as Powertools'
        persistence layers do without ``boto3_client``: the local provider server does)."""
        self.table_name = table_name
        self.client = client if client is not None else boto3.session.Session().client("dynamodb")

    def get_op(self, provider: str, key: str) -> dict[str, Any] | None:
        response = self.client.get_item(
            TableName=self.table_name, Key=to_item({"pk": f"op#{provider}#{key}", "sk": OP_SK}), ConsistentRead=True
        )
        return from_item(response["Item"]) if "Item" in response else None

    def put_op(self, provider: str, key: str, op: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """Store ``op`` under ``key`` unless one exists; returns (the stored op, created?)."""
        item = {"pk": f"op#{provider}#{key}", "sk": OP_SK, "provider": provider, "idempotency_key": key, **op}
        try:
            self.client.put_item(
                TableName=self.table_name,
                Item=to_item(item),
                ConditionExpression="attribute_not_exists(pk)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
            return item, True
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise
            old = exc.response.get("Item")
            stored = from_item(old) if old else self.get_op(provider, key)
            return stored or item, False

    def replace_op(self, provider: str, key: str, op: dict[str, Any]) -> dict[str, Any]:
        """Overwrite the operation under ``key`` if it is still ``shipped`` (a carrier recalling a
        parcel); returns what is stored afterwards (the other writer's op if it changed meanwhile)."""
        item = {"pk": f"op#{provider}#{key}", "sk": OP_SK, "provider": provider, "idempotency_key": key, **op}
        try:
            self.client.put_item(
                TableName=self.table_name,
                Item=to_item(item),
                ConditionExpression="#s = :shipped",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":shipped": {"S": "shipped"}},
            )
            return item
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise
            return self.get_op(provider, key) or item

    def op_item(self, provider: str, key: str, op: dict[str, Any]) -> dict[str, Any]:
        return to_item({"pk": f"op#{provider}#{key}", "sk": OP_SK, "provider": provider, "idempotency_key": key, **op})

    def count_requests(self, provider: str, key: str) -> int:
        """How many requests the provider has received for ``key`` so far."""
        response = self.client.query(
            TableName=self.table_name,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": f"req#{provider}#{key}"}},
            Select="COUNT",
            ConsistentRead=True,
        )
        return int(response["Count"])

    def record_request(self, provider: str, request: dict[str, Any], *, deduplicated: bool, outcome: str) -> None:
        key = str(request.get("idempotency_key", "missing"))
        item = {
            "pk": f"req#{provider}#{key}",
            "sk": f"{time.time():.6f}#{uuid.uuid4()}",
            "provider": provider,
            "action": request.get("action"),
            "idempotency_key": key,
            "order_id": request.get("order_id"),
            "correlation_id": request.get("correlation_id"),
            "deduplicated": deduplicated,
            "outcome": outcome,
        }
        self.client.put_item(TableName=self.table_name, Item=to_item(item))
