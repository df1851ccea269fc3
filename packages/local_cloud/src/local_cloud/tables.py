"""Read a DynamoDB table whole: from moto's in-process backend when it is here, else through Scan."""

from __future__ import annotations

from typing import Any

from boto3.dynamodb.types import TypeDeserializer

from local_cloud.clients import aws as _client
from local_cloud.clients import moto_in_process
from local_cloud.template import ACCOUNT, REGION

_DESERIALIZER = TypeDeserializer()


def scan_all(table: str, attributes: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Every item of ``table``, deserialized (only ``attributes`` when given: the report needs few).

    In-process moto: read from the backend, as :mod:`local_cloud.histories` reads histories. Through
    Scan, moto serializes every item with its generic serializer and botocore parses it back: the
    report's largest cost after the histories (profiled: ~6 s of a 1,000-order shard's report,
    which scans each table several times). The backend holds the same items Scan returns
    (canary ``test_canary_backend_scan_equals_the_api_scan``). A moto server elsewhere
    (``AWS_ENDPOINT_URL``): the API.
    """
    return _scan_backend(table, attributes) if moto_in_process() else _scan_api(table, attributes)


def _scan_backend(table: str, attributes: tuple[str, ...]) -> list[dict[str, Any]]:
    from moto.dynamodb.models import dynamodb_backends

    from local_cloud.moto_patches import dynamodb_lock

    wanted = set(attributes)
    with dynamodb_lock():  # no writer moves an item while it is read
        items = dynamodb_backends[ACCOUNT][REGION].get_table(table).all_items()
        return [
            {
                name: _DESERIALIZER.deserialize(value.to_regular_json())
                for name, value in item.attrs.items()
                if not wanted or name in wanted
            }
            for item in items
        ]


def _scan_api(table: str, attributes: tuple[str, ...]) -> list[dict[str, Any]]:
    client = _client("dynamodb")
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": table}
    if attributes:
        names = {f"#a{i}": name for i, name in enumerate(attributes)}
        kwargs.update(ProjectionExpression=", ".join(names), ExpressionAttributeNames=names)
    while True:
        page = client.scan(**kwargs)
        items.extend({k: _DESERIALIZER.deserialize(v) for k, v in item.items()} for item in page.get("Items", []))
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
