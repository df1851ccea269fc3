"""Stack outputs: what the ops CLI and the local runner read (ops/target.py resolves them by name)."""

from __future__ import annotations

from typing import Any

from tests.infra.conftest import SynthResult, present


def _outputs(synth: SynthResult) -> dict[str, Any]:
    return {name: output["Value"] for name, output in synth.template.to_json()["Outputs"].items()}


def test_outputs_reference_the_stack_resources(dev: SynthResult) -> None:
    stack = dev.stack

    def ref(construct: Any) -> dict[str, str]:
        return {"Ref": dev.logical_id(construct)}

    functions = (
        stack.intake,
        stack.reserve,
        stack.charge,
        stack.ship,
        stack.cancel_shipment,
        stack.refund,
        stack.release,
        stack.finalize,
        present(stack.payment_provider),
        present(stack.carrier),
        stack.sweeper,
        stack.dlq_replay,
        stack.provider_webhook,
    )
    assert _outputs(dev) == {
        "NeedsAttentionQueueUrl": ref(stack.needs_attention.queue),
        "NeedsAttentionDlqUrl": ref(stack.needs_attention.dlq),
        "InventoryTableName": ref(stack.inventory_table),
        "SagaTimeoutSeconds": "9819",
        "FailuresTableName": ref(stack.failures_table),
        "LogGroupNames": {"Fn::Join": [",", [ref(f.log_group) for f in functions]]},
        "OrdersQueueUrl": ref(stack.orders_queue.queue),
        "OrdersDlqUrl": ref(stack.orders_queue.dlq),
        "StateMachineArn": ref(stack.saga.state_machine),
        "OrdersTableName": ref(stack.orders_table),
        "IdempotencyTableName": ref(stack.idempotency_table),
        "LedgerTableName": ref(stack.ledger_table),
        "AlarmTopicArn": ref(stack.alarm_topic),
        "TicketTopicArn": ref(stack.ticket_topic),
        "OrderApiUrl": stack.resolve(stack.order_api.api.url),
    }


def test_outputs_saga_timeout_matches_the_state_machine(dev: SynthResult, saga_definition: dict[str, Any]) -> None:
    assert int(_outputs(dev)["SagaTimeoutSeconds"]) == saga_definition["TimeoutSeconds"]


def test_outputs_same_names_in_prod_but_the_sandbox_ledger(dev: SynthResult, prod: SynthResult) -> None:
    assert set(_outputs(prod)) == set(_outputs(dev)) - {"LedgerTableName"}
    assert len(prod.stack.functions) == 11
    assert _outputs(prod)["LogGroupNames"] == {
        "Fn::Join": [",", [{"Ref": prod.logical_id(f.log_group)} for f in prod.stack.functions]]
    }
    assert _outputs(prod)["SagaTimeoutSeconds"] == _outputs(dev)["SagaTimeoutSeconds"]
