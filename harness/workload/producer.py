"""The producer: what the pipeline's clients send (orders on the queue, stock, direct executions)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import botocore.exceptions

from harness.workload.api_client import OrderApi
from harness.workload.hostile import HostileExecution
from harness.workload.hostile import execution_name as hostile_execution_name
from harness.workload.orders import INITIAL_STOCK, STOCKED_SKUS
from local_cloud.clients import aws

#: SQS refuses a batch whose messages add up to more than 256 KiB; stay well below it.
MAX_BATCH_BYTES = 200_000
#: A producer keeps trying: throttling must not lose an order here.
SEND_ATTEMPTS = 20

Message = tuple[str, str | None]  # (body, correlation id)


def _batches(messages: list[Message]) -> Iterator[list[Message]]:
    """At most 10 messages per batch, and at most :data:`MAX_BATCH_BYTES` (a 100 KB message goes alone if needed)."""
    batch: list[Message] = []
    size = 0
    for body, cid in messages:
        n = len(body.encode("utf-8")) + len((cid or "").encode("utf-8"))
        if batch and (len(batch) == 10 or size + n > MAX_BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append((body, cid))
        size += n
    if batch:
        yield batch


def _too_long(error: dict[str, Any]) -> bool:
    """SQS's answer to a message over the queue's MaximumMessageSize (``InvalidParameterValue``,
    "Message must be shorter than N bytes"): https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html"""
    return error.get("Code") == "InvalidParameterValue" and "shorter than" in str(error.get("Message", ""))


def _entry(index: int, body: str, cid: str | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"Id": str(index), "MessageBody": body}
    if cid:  # the correlation ID travels as a message attribute
        entry["MessageAttributes"] = {"correlation_id": {"DataType": "String", "StringValue": cid}}
    return entry


class Producer:
    """Sends to the orders queue and the state machine like the pipeline's clients would."""

    def __init__(self, queue_url: str, state_machine_arn: str, inventory_table: str) -> None:
        self.queue_url = queue_url
        self.state_machine_arn = state_machine_arn
        self.inventory_table = inventory_table
        #: Correlation IDs (or "" when none) of the messages SQS refused as too long at SendMessage:
        #: the producer learnt it synchronously, as a client must (the hostile ``oversize_refused``).
        self.refused_at_send: list[str] = []
        #: Set when orders go through the order API (``--via api``) instead of SendMessage.
        self.api: OrderApi | None = None

    def seed_inventory(self) -> None:
        """Every stocked SKU at :data:`~harness.workload.orders.INITIAL_STOCK`."""
        ddb = aws("dynamodb")
        for sku in STOCKED_SKUS:
            ddb.put_item(
                TableName=self.inventory_table, Item={"pk": {"S": f"sku#{sku}"}, "available": {"N": str(INITIAL_STOCK)}}
            )

    def submit_messages(self, messages: list[Message]) -> None:
        """Send raw bodies (with optional correlation IDs); retry what SQS refuses as throttled.
        Through the order API (``--via api``): one POST per message; what it refuses (400, 413) is
        refused at send, learnt synchronously, as SQS's own refusals are."""
        if self.api is not None:
            for body, cid in messages:
                self._post(body, cid)
            return
        sqs = aws("sqs")
        for batch in _batches(messages):
            entries = {str(i): _entry(i, body, cid) for i, (body, cid) in enumerate(batch)}
            for _ in range(SEND_ATTEMPTS):
                try:
                    response = sqs.send_message_batch(QueueUrl=self.queue_url, Entries=list(entries.values()))
                except botocore.exceptions.ClientError as exc:
                    if _too_long(exc.response.get("Error", {})):  # one entry over the limit fails the batch:
                        entries = self._send_one_by_one(entries)  # send each alone, keep what is throttled
                        if not entries:
                            break
                    continue
                for failed in response.get("Failed", []):
                    if failed.get("SenderFault") and _too_long(failed):
                        self._refused(entries.pop(failed["Id"]))
                    elif failed.get("SenderFault"):
                        raise RuntimeError(f"SQS refused a message: {failed}")
                entries = {f["Id"]: entries[f["Id"]] for f in response.get("Failed", []) if f["Id"] in entries}
                if not entries:
                    break
            else:
                raise RuntimeError(f"could not submit messages after {SEND_ATTEMPTS} attempts")

    def _post(self, body: str, cid: str | None) -> None:
        assert self.api is not None
        answer = self.api.post_order(body, cid)
        if answer.status == 429 or answer.status >= 500:
            raise RuntimeError(f"the order API kept answering {answer.status} after retries")
        if answer.status >= 400:
            self.refused_at_send.append(cid or "")

    def _refused(self, entry: dict[str, Any]) -> None:
        cid = entry.get("MessageAttributes", {}).get("correlation_id", {}).get("StringValue", "")
        self.refused_at_send.append(str(cid))

    def _send_one_by_one(self, entries: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Send each entry with SendMessage; record those refused as too long; return the rest unsent."""
        sqs = aws("sqs")
        left: dict[str, dict[str, Any]] = {}
        for key, entry in entries.items():
            try:
                sqs.send_message(QueueUrl=self.queue_url, **{k: v for k, v in entry.items() if k != "Id"})
            except botocore.exceptions.ClientError as exc:
                if _too_long(exc.response.get("Error", {})):
                    self._refused(entry)
                else:
                    left[key] = entry
        return left

    def submit(self, orders: list[tuple[dict[str, Any], str | None]]) -> None:
        """Send orders as JSON, as :meth:`submit_messages` does (an incident's orders meet the chaos run's
        throttling too: a send throttled past botocore's own retries once killed a chaos shard)."""
        self.submit_messages([(json.dumps(order), cid) for order, cid in orders])

    def start_hostile_executions(self, executions: list[HostileExecution]) -> None:
        """Start the saga directly with references to orders the pipeline never accepted."""
        sfn = aws("stepfunctions")
        for hostile in executions:
            sfn.start_execution(
                stateMachineArn=self.state_machine_arn,
                name=hostile_execution_name(hostile.order_id, hostile.payment_attempt),
                input=json.dumps(hostile.saga_input()),
            )
