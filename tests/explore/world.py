"""The world the exploration acts on: the real domain code and handlers on moto, one simulated clock,
the sandbox providers in-process, and the faults a rule may arm.

One moto (``mock_aws``) and one set of loaded handlers for the whole process (a cold start per handler
is ~100 ms: too slow per example); each example starts from :meth:`World.reset` (moto's backends
emptied, the stack's tables, queue and state machine created again under the same names the handlers
were configured with). The clock is ``order_domain.clock.now`` patched, as the local run's
``HANDLER_CLOCKS`` does (harness/stack/pipeline.py): the lease, the sweeper's thresholds and every
``updated_at`` follow it; rules move it by seconds to days.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import boto3
from botocore.client import BaseClient
from botocore.exceptions import ClientError
from moto import mock_aws

import lambda_resilience.aws as aws_clients
import order_domain.clock
import order_domain.env as names
import tests.conftest  # noqa: F401  (fake credentials, the region: no real endpoint reachable)
from lambda_resilience.aws import from_item, to_item
from lambda_resilience.testing import FakeLambdaContext
from tests.handlers.conftest import (
    ACCOUNT,
    CARRIER_FUNCTION,
    LAMBDAS,
    ORDERS_STATUS_INDEX,
    ORDERS_UNSETTLED_INDEX,
    PAYMENT_FUNCTION,
    REGION,
    ROLE_ARN,
    Died,
    FakeLambdaClient,
    Handler,
    _create_table,
    load_handler,
)
from tests.moto_session import reuse_one_session

IDEMPOTENCY, ORDERS, INVENTORY, LEDGER = "x-idempotency", "x-orders", "x-inventory", "x-ledger"
STATE_MACHINE = "x-order-saga"
STATE_MACHINE_ARN = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{STATE_MACHINE}"
NEEDS_ATTENTION = "x-needs-attention"
NEEDS_ATTENTION_URL = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{NEEDS_ATTENTION}"
#: The stack's sweeper settings (stacks/order_constructs/sweeper.py): stuck after 6,600 s, reconcile 15 min.
STUCK_AFTER_SECONDS, RECONCILE_WINDOW_SECONDS = 6600, 900
#: Where simulated time starts (2027-01-15T08:00:00Z): a fixed instant, so runs repeat.
EPOCH = 1_800_000_000.0
#: The functions the saga invokes (lambdas/<dir>/handler.py).
STEP_FUNCTIONS = (
    "reserve_inventory",
    "charge_payment",
    "ship_order",
    "cancel_shipment",
    "refund_payment",
    "release_inventory",
    "finalize_order",
    "sweeper",
)
#: What a rule's fault makes a write do: a throttled write (transient) or the process dying.
THROTTLED = ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "UpdateItem")
#: The provider requests that move something (a lookup does not).
EFFECT_ACTIONS = frozenset({"charge", "refund", "ship", "cancel"})
#: Stock every SKU starts with; the out-of-stock SKU has none.
STOCK = {"SKU-A": 50, "SKU-B": 50, "SKU-NONE": 0}


class SimClock:
    """Simulated seconds since the epoch, moved only by rules (and by Step Functions' retry waits)."""

    def __init__(self) -> None:
        self.value = EPOCH

    def now(self) -> float:
        return self.value

    def advance(self, seconds: float) -> None:
        self.value += seconds


@dataclass
class Faults:
    """Faults armed for the next invocation (a rule arms them, the invocation consumes them)."""

    #: Orders-table UpdateItems moving an order to one of these statuses are throttled.
    fail_status_to: set[str] = field(default_factory=set)
    #: The process dies at its first write to the orders or idempotency table after an effect.
    crash_after_effect: bool = False
    #: The process dies before its first provider request (before any effect).
    crash_before_effect: bool = False
    effect_done: bool = False

    def clear(self) -> None:
        self.fail_status_to.clear()
        self.crash_after_effect = self.crash_before_effect = self.effect_done = False


class ProviderClient(FakeLambdaClient):
    """The sandbox providers in-process (tests/handlers' fake Lambda client), telling the world when
    a request that moves something has been answered: the point a crash "after the effect" follows."""

    world: World | None = None

    def invoke(self, *, FunctionName: str, Payload: bytes, InvocationType: str = "RequestResponse", **_: Any) -> Any:
        world = self.world
        moving = json.loads(Payload).get("action") in EFFECT_ACTIONS
        if world is not None and moving and world.faults.crash_before_effect:
            raise Died("crashed before the provider request")
        response = super().invoke(FunctionName=FunctionName, Payload=Payload, InvocationType=InvocationType)
        if world is not None and moving:
            world.faults.effect_done = True
        return response


class World:
    """moto, the handlers, the clock and the faults (see the module doc)."""

    def __init__(self) -> None:
        # Quiet handlers: no log line below CRITICAL, no EMF blob (the invariants read the tables, not the logs).
        # Restored by close(): a later test in the same worker must see the process's own environment (a left
        # POWERTOOLS_METRICS_DISABLED silenced every EMF flush of the emulator's tests after this module).
        self._environ = mock.patch.dict(
            os.environ, {"POWERTOOLS_LOG_LEVEL": "CRITICAL", "POWERTOOLS_METRICS_DISABLED": "true"}
        )
        self._environ.start()
        warnings.filterwarnings("ignore", message="No application metrics to publish")
        self.clock = SimClock()
        self.faults = Faults()
        self.announced: list[dict[str, Any]] = []
        #: The exploration's actors: they answer Step Functions reads and see every call (actors.Actors).
        self.hooks: Any = None
        self._mock = mock_aws()
        self._mock.start()
        reuse_one_session()
        aws_clients.reset_clients()
        self._original_call = BaseClient._make_api_call

        def dispatch(client: Any, operation: str, params: dict[str, Any]) -> Any:
            return self._call(client, operation, params)

        from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import AmazonCloudWatchEMFProvider

        self._patches: list[Any] = [
            # No EMF metric is kept (Powertools' disabled switch still accumulates them, then prints).
            mock.patch.object(AmazonCloudWatchEMFProvider, "add_metric", lambda *_a, **_k: None),
            mock.patch.object(BaseClient, "_make_api_call", dispatch),
            mock.patch.object(order_domain.clock, "now", self.clock.now),
        ]
        for patch in self._patches:
            patch.start()
        self.env = {
            names.IDEMPOTENCY_TABLE_NAME: IDEMPOTENCY,
            names.ORDERS_TABLE_NAME: ORDERS,
            names.INVENTORY_TABLE_NAME: INVENTORY,
            names.LEDGER_TABLE_NAME: LEDGER,
            names.STATE_MACHINE_ARN: STATE_MACHINE_ARN,
            names.PAYMENT_PROVIDER_FUNCTION: PAYMENT_FUNCTION,
            names.CARRIER_FUNCTION: CARRIER_FUNCTION,
            names.NEEDS_ATTENTION_QUEUE_URL: NEEDS_ATTENTION_URL,
            names.STUCK_AFTER_SECONDS: str(STUCK_AFTER_SECONDS),
            names.RECONCILE_WINDOW_SECONDS: str(RECONCILE_WINDOW_SECONDS),
            "POWERTOOLS_LOG_LEVEL": "CRITICAL",
            "POWERTOOLS_METRICS_DISABLED": "true",
        }
        self.reset()
        providers = {PAYMENT_FUNCTION: self._load("sandbox_payment"), CARRIER_FUNCTION: self._load("sandbox_carrier")}
        self.providers = ProviderClient(functions=providers)
        self.providers.world = self
        aws_clients._clients["lambda"] = self.providers
        self.handlers: dict[str, Handler] = {name: self._load(name) for name in STEP_FUNCTIONS}

    def _load(self, function_dir: str) -> Handler:
        env = {**self.env, "POWERTOOLS_SERVICE_NAME": function_dir.replace("_", "-")}
        with mock.patch.dict(os.environ, env):
            return load_handler(LAMBDAS / function_dir, "handler.handler", env)

    def close(self) -> None:
        for patch in reversed(self._patches):
            patch.stop()
        self._mock.stop()
        aws_clients.reset_clients()
        self._environ.stop()

    # -- resources -------------------------------------------------------------------------------

    def reset(self) -> None:
        """An empty account with the stack's tables, queue, state machine and stock; time at the epoch."""
        self._mock.reset()
        self.clock.value = EPOCH
        self.faults.clear()
        self.announced.clear()
        self.hooks = None
        ddb = boto3.client("dynamodb", region_name=REGION)
        _create_table(ddb, IDEMPOTENCY, "id", ttl="expiration")
        _create_table(ddb, ORDERS, "order_id", index=[ORDERS_STATUS_INDEX, ORDERS_UNSETTLED_INDEX])
        _create_table(ddb, INVENTORY, "pk")
        _create_table(ddb, LEDGER, "pk", "sk")
        boto3.client("sqs", region_name=REGION).create_queue(QueueName=NEEDS_ATTENTION)
        definition = {"StartAt": "Noop", "States": {"Noop": {"Type": "Pass", "End": True}}}
        boto3.client("stepfunctions", region_name=REGION).create_state_machine(
            name=STATE_MACHINE, definition=json.dumps(definition), roleArn=ROLE_ARN
        )
        for sku, count in STOCK.items():
            ddb.put_item(TableName=INVENTORY, Item=to_item({"pk": f"sku#{sku}", "available": count}))

    def scan(self, table: str) -> list[dict[str, Any]]:
        """Every item of ``table``, read from moto's backend (no request: the invariants read after every
        rule, and a Scan's serialization would cost more than the rule)."""
        from moto.dynamodb.models import dynamodb_backends

        found = dynamodb_backends[ACCOUNT][REGION].get_table(table).all_items()
        return [from_item(item.to_json()["Attributes"]) for item in found]

    def raw(self, operation: str, **params: Any) -> Any:
        """A DynamoDB call no fault touches (the world's own bookkeeping: expiry, provider forgetting)."""
        return self._original_call(aws_clients.client("dynamodb"), operation, params)

    def context(self, seconds: float = 30.0) -> Any:
        return FakeLambdaContext(function_name="explore", timeout_seconds=seconds)

    # -- the fault dispatcher ----------------------------------------------------------------------

    def _call(self, client: Any, operation: str, params: dict[str, Any]) -> Any:
        self._before(operation, params)
        answer = self.hooks.answer(operation, params) if self.hooks is not None else None
        if answer is not None:
            return answer
        result = self._original_call(client, operation, params)
        if self.hooks is not None:
            self.hooks.after(operation, params)
        if operation == "TransactWriteItems" and _touches(params, INVENTORY):
            self.faults.effect_done = True  # a reservation or a release committed
        if operation == "SendMessage" and params.get("QueueUrl") == NEEDS_ATTENTION_URL:
            self.announced.append({**json.loads(params["MessageBody"]), "at": self.clock.now()})
        return result

    def _before(self, operation: str, params: dict[str, Any]) -> None:
        table = params.get("TableName")
        writes = operation in ("PutItem", "UpdateItem", "TransactWriteItems")
        if not writes:
            return
        to = (params.get("ExpressionAttributeValues") or {}).get(":to", {}).get("S")
        if table == ORDERS and operation == "UpdateItem" and to in self.faults.fail_status_to:
            raise THROTTLED
        if self.faults.crash_after_effect and self.faults.effect_done and table in (ORDERS, IDEMPOTENCY):
            self.faults.crash_after_effect = False
            raise Died("crashed after the effect, before its record")


def _touches(params: dict[str, Any], table: str) -> bool:
    for action in params.get("TransactItems") or []:
        for body in action.values():
            if body.get("TableName") == table:
                return True
    return False


_WORLD: World | None = None


def world() -> World:
    """The process's one world (created on first use), reset for the caller."""
    global _WORLD
    if _WORLD is None:
        _WORLD = World()
    else:
        _WORLD.reset()
    return _WORLD


def close_world() -> None:
    """Stop the process's world (moto, the patches): nothing of it outlives the module that used it."""
    global _WORLD
    if _WORLD is not None:
        _WORLD.close()
        _WORLD = None
