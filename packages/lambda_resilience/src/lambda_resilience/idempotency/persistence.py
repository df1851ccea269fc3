"""DynamoDB persistence that stores the caller's business key verbatim as the record ID.

Everything else is Powertools' :class:`DynamoDBPersistenceLayer`, given our own client through
its public ``boto3_client`` parameter. On that client two botocore event hooks (public API) ask
DynamoDB for the replaced item on the conditional put (``ReturnValues=ALL_OLD``, no extra call)
and report a put that replaced an expired IN_PROGRESS record (a crashed attempt taken over).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer
from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyKeyError

from lambda_resilience.idempotency.config import KEY_FIELD

#: Powertools' default payload hash (``IdempotencyConfig(hash_function="md5")``); see :func:`payload_hash`.
HASH_FUNCTION = "md5"


def payload_hash(payload: Any) -> str:
    """The hash Powertools stores for ``payload`` (JSON-native values) in the validation attribute.

    Powertools does not expose it, so it is recomputed for the mismatch log line; the contract
    test ``test_powertools_contract_payload_hash_matches_stored_validation`` pins the equality.
    """
    text = json.dumps(payload, sort_keys=True, default=str)
    return hashlib.new(HASH_FUNCTION, text.encode()).hexdigest()


class BusinessKeyPersistenceLayer(DynamoDBPersistenceLayer):
    """Powertools' DynamoDB persistence, keyed by the command's business key, verbatim.

    Args:
        table_name: the idempotency table (partition key ``id``, TTL attribute ``expiration``).
        boto3_client: the DynamoDB client to use (public Powertools parameter).
        on_takeover: called with the key when a put replaced an expired IN_PROGRESS record.
    """

    def __init__(self, table_name: str, *, boto3_client: Any, on_takeover: Callable[[str], None] | None = None) -> None:
        super().__init__(table_name=table_name, boto3_client=boto3_client)
        self.on_takeover = on_takeover
        # Hooks are closures, not methods: no new name on a Powertools subclass can shadow one of its own.
        table, status_attr, key_attr = self.table_name, self.status_attr, self.key_attr

        def request_replaced_item(params: dict[str, Any], **_: Any) -> None:
            if params.get("TableName") == table and "ConditionExpression" in params:
                params["ReturnValues"] = "ALL_OLD"

        def report_takeover(parsed: dict[str, Any], **_: Any) -> None:
            old = parsed.get("Attributes") or {}
            if old.get(status_attr, {}).get("S") == "INPROGRESS" and self.on_takeover is not None:
                self.on_takeover(str(old.get(key_attr, {}).get("S", "")))

        events = boto3_client.meta.events
        events.register("before-parameter-build.dynamodb.PutItem", request_replaced_item)
        events.register("after-call.dynamodb.PutItem", report_takeover)

    # DOCUMENTED EXCEPTION (the only private Powertools member this package touches): Powertools
    # offers no public way to store a key verbatim - its record ID is always
    # ``<key_prefix or function name>#<hash of the key>``. We override the one method that builds
    # it. Pinned by tests/middleware/test_powertools_contract.py
    # (test_powertools_contract_hashed_key_method_* and test_powertools_contract_record_id_is_verbatim_*),
    # which fail if an upgrade renames the method, changes its signature, or stops routing
    # get/put/update/delete through it.
    def _get_hashed_idempotency_key(self, data: dict[str, Any]) -> str | None:
        key = data.get(KEY_FIELD) if isinstance(data, dict) else None
        if not isinstance(key, str) or not key.strip():
            raise IdempotencyKeyError(f"command has no {KEY_FIELD!r}")
        return key


def stored_payload_hash(persistence: DynamoDBPersistenceLayer, key: str) -> str | None:
    """The payload hash stored with ``key`` (one consistent read; used on the mismatch path only)."""
    item = persistence.client.get_item(
        TableName=persistence.table_name,
        Key={persistence.key_attr: {"S": key}},
        ConsistentRead=True,
        ProjectionExpression="#v",
        ExpressionAttributeNames={"#v": persistence.validation_key_attr},
    ).get("Item", {})
    value = item.get(persistence.validation_key_attr, {}).get("S")
    return str(value) if value is not None else None
