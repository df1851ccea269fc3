"""The smoke removes what it created: its orders that ended and their reservations, its DLQ message and
failure record, and the SKU if it seeded it (an order still in flight or parked is kept)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from botocore.exceptions import ClientError

from ops.smoke_model import SMOKE_SKU, Case, SmokeRun


class SmokeCleanup(SmokeRun):
    """Each cleanup step on its own: one failure does not stop the rest."""

    def cleanup(self, cases: list[Case], malformed_cid: str) -> None:
        """Remove what this run created (each step on its own: one failure does not stop the rest)."""
        dynamodb = self.target.client("dynamodb")
        for step in self._cleanup_steps(cases, malformed_cid, dynamodb):
            try:
                step()
            except Exception as exc:  # best effort: report, keep cleaning
                self.report.notes.append(f"cleanup: {type(exc).__name__}: {exc}")

    def _cleanup_steps(self, cases: list[Case], malformed_cid: str, dynamodb: Any) -> Iterator[Callable[[], Any]]:
        orders_table, inventory = self.target.output("OrdersTableName"), self.target.output("InventoryTableName")
        for case in cases:
            yield partial(self._remove_if_ended, dynamodb, orders_table, inventory, case.order_id)
        yield partial(self._remove_dead_letter, malformed_cid)
        if self.seeded_sku:
            yield partial(dynamodb.delete_item, TableName=inventory, Key={"pk": {"S": f"sku#{SMOKE_SKU}"}})

    def _remove_if_ended(self, dynamodb: Any, orders_table: str, inventory: str, order_id: str) -> None:
        """Delete the order's row and reservations only if it ended (COMPLETED or COMPENSATED): an
        order still in flight (or parked) may hold money or stock, and its row is what lets the saga,
        the sweeper or an operator finish it (a conditional delete: no read-then-delete race)."""
        try:
            dynamodb.delete_item(
                TableName=orders_table,
                Key={"order_id": {"S": order_id}},
                ConditionExpression="attribute_not_exists(order_id) OR #s IN (:completed, :compensated)",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":completed": {"S": "COMPLETED"}, ":compensated": {"S": "COMPENSATED"}},
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            self.report.notes.append(
                f"cleanup: order {order_id} is still in flight or parked: its row is kept (the saga or the "
                "sweeper finishes it; check it with the order status API or the needs-attention queue)"
            )
            return
        for attempt in (1, 2):
            key = {"pk": {"S": f"reservation#{order_id}#attempt-{attempt}"}}
            dynamodb.delete_item(TableName=inventory, Key=key)

    def _remove_dead_letter(self, correlation_id: str) -> None:
        from ops.dlq import failures_table, peek

        table = failures_table(self.target)
        dlq_url = self.target.output("OrdersDlqUrl")
        for message in peek(self.target, dlq_url):
            if message.correlation_id == correlation_id:
                self.target.client("sqs").delete_message(QueueUrl=dlq_url, ReceiptHandle=message.receipt_handle)
                if table:
                    for message_id in {message.message_id, *self.sent_message_ids}:
                        self.target.client("dynamodb").delete_item(
                            TableName=table, Key={"message_id": {"S": message_id}}
                        )
