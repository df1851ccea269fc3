"""Run the intake handler once with tracing ON (as in Lambda), against moto; print what X-Ray got.

A separate process: turning the tracer on patches botocore and http.client process-wide, which
must not leak into other tests. Prints one JSON object: subsegment names, annotations, metadata keys.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import boto3
from moto import mock_aws

import order_domain.env as env_names

#: The intake function's code (the layer packages it imports are installed in the virtualenv).
HANDLER_FILE = Path(__file__).resolve().parents[3] / "lambdas" / "intake" / "handler.py"


class Capture:
    """An X-Ray emitter that keeps entities instead of sending UDP packets."""

    def __init__(self) -> None:
        self.entities: list[dict[str, Any]] = []

    def send_entity(self, entity: Any) -> None:
        self.entities.append(json.loads(entity.serialize()))

    def set_daemon_address(self, address: str) -> None:
        return None

    @property
    def ip(self) -> str:
        return "127.0.0.1"

    @property
    def port(self) -> int:
        return 2000


def walk(entity: dict[str, Any]) -> list[dict[str, Any]]:
    out = [entity]
    for child in entity.get("subsegments", []):
        out.extend(walk(child))
    return out


def main() -> None:
    with mock_aws():
        ddb = boto3.client("dynamodb", region_name="us-east-1")
        for name, key in (("idem", "id"), ("orders", "order_id")):
            ddb.create_table(
                TableName=name,
                KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
                AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
                BillingMode="PAY_PER_REQUEST",
            )
        sfn = boto3.client("stepfunctions", region_name="us-east-1")
        arn = sfn.create_state_machine(
            name="saga",
            definition=json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}),
            roleArn="arn:aws:iam::123456789012:role/x",
        )["stateMachineArn"]
        import os

        os.environ.update(
            {
                env_names.IDEMPOTENCY_TABLE_NAME: "idem",
                env_names.ORDERS_TABLE_NAME: "orders",
                env_names.STATE_MACHINE_ARN: arn,
            }
        )
        # The intake handler, imported as Lambda's bootstrap does (module ``handler``): a cold start with tracing on.
        spec = importlib.util.spec_from_file_location("handler", HANDLER_FILE)
        assert spec is not None and spec.loader is not None
        handler = importlib.util.module_from_spec(spec)
        sys.modules["handler"] = handler
        spec.loader.exec_module(handler)
        from aws_xray_sdk.core import xray_recorder

        capture = Capture()
        xray_recorder.configure(emitter=capture)
        order = json.loads(sys.argv[1])
        records = [
            {
                "messageId": f"m-{i}",
                "receiptHandle": "r",
                "body": json.dumps({**order, "order_id": f"{order['order_id']}-{i}"}),
                "attributes": {
                    "ApproximateReceiveCount": "1",
                    "SentTimestamp": "1",
                    "SenderId": "s",
                    "ApproximateFirstReceiveTimestamp": "1",
                },
                "messageAttributes": {"correlation_id": {"stringValue": f"cid-traced-{i}", "dataType": "String"}},
                "md5OfBody": "x",
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:q",
                "awsRegion": "us-east-1",
            }
            for i in range(3)
        ]

        class Context:
            function_name = "intake"
            memory_limit_in_mb = 512
            invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:intake"
            aws_request_id = "req-1"

            def get_remaining_time_in_millis(self) -> int:
                return 30000

        response = handler.handler({"Records": records}, Context())
        entities = [e for root in capture.entities for e in walk(root)]
        print(
            "XRAY-RESULT "
            + json.dumps(
                {
                    "response": response,
                    "names": sorted({e.get("name") for e in entities}),
                    "annotations": [e.get("annotations", {}) for e in entities if e.get("annotations")],
                    "metadata": [e.get("metadata", {}) for e in entities if e.get("metadata")],
                    "raw": json.dumps(capture.entities),
                }
            )
        )


if __name__ == "__main__":
    main()
