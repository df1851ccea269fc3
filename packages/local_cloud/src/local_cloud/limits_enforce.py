"""Enforce :mod:`local_cloud.limits` in the local run, answering as AWS does.

How: like :mod:`local_cloud.iam_enforce`, ``BaseClient._make_api_call`` is wrapped at class level
while :func:`enforce_limits` is active; one dict lookup on (service, operation) decides whether
a call is checked at all, so the other calls pay almost nothing. Token buckets run on the run's
:class:`~local_cloud.clock.SimClock`. A call over a limit raises the service's own ``ClientError``
(code, HTTP status, message shape) before it reaches moto, so handlers classify and retry it
exactly as they would on AWS.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

from local_cloud.clock import SimClock
from local_cloud.errors import service_error
from local_cloud.interfaces import Deployment
from local_cloud.limits import Quotas, TokenBucket, payload_size
from local_cloud.service_metrics import ServiceMetrics

#: (code, HTTP status, message) AWS returns, per limit.
SFN_THROTTLED = ("ThrottlingException", 400, "Rate exceeded")
SFN_INPUT_TOO_LARGE = (
    "ValidationException",
    400,
    "1 validation error detected: Value at 'input' failed to satisfy constraint: "
    "Member must have length less than or equal to {limit}",
)
LAMBDA_THROTTLED = ("TooManyRequestsException", 429, "Rate Exceeded.")
LAMBDA_TOO_LARGE = (
    "RequestTooLargeException",
    413,
    "Request must be smaller than {limit} bytes for the InvokeFunction operation",
)
SQS_TOO_LONG = (
    "InvalidParameterValue",
    400,
    "One or more parameters are invalid. Reason: Message must be shorter than {limit} bytes.",
)
SQS_BATCH_TOO_LONG = ("BatchRequestTooLong", 400, "Batch requests cannot be longer than {limit} bytes.")
DDB_ITEM_TOO_LARGE = ("ValidationException", 400, "Item size has exceeded the maximum allowed size")


#: At most this long (wall seconds) a throttled execution waits before it looks for a refilled
#: StateTransition token again (a jump of the simulated clock wakes it at once).
TRANSITION_WAIT_SECONDS = 0.01


class LimitExceeded(Exception):
    """A limit was hit: carries the AWS error to raise."""

    def __init__(self, error: tuple[str, int, str], **fmt: Any) -> None:
        code, status, message = error
        super().__init__(code)
        self.code, self.status, self.message = code, status, message.format(**fmt)


def client_error(client: Any, operation: str, exc: LimitExceeded) -> Exception:
    """The botocore ClientError for ``exc``, as the service would return it."""
    extra = {}
    if exc.code == "TooManyRequestsException":
        extra["Reason"] = "ReservedFunctionConcurrentInvocationLimitExceeded"
    return service_error(client, operation, exc.code, exc.message, exc.status, **extra)


def message_size(body: Any, attributes: Any) -> int:
    """SQS counts the body and every attribute's name, type and value."""
    size = payload_size(body or "")
    for name, attr in (attributes or {}).items():
        size += payload_size(name) + payload_size(attr.get("DataType", ""))
        size += payload_size(attr.get("StringValue", "")) + len(attr.get("BinaryValue", b"") or b"")
    return size


def item_size(item: Any) -> int:
    """An approximation of DynamoDB's item size: attribute names plus their values' JSON."""
    return sum(payload_size(k) + payload_size(json.dumps(v, default=str)) for k, v in (item or {}).items())


class LimitEnforcer:
    """The limits of one deployment: buckets, concurrency slots, payload checks, throttle counts."""

    def __init__(
        self, quotas: Quotas, clock: SimClock, deployment: Deployment | None = None, *, concurrency: bool = True
    ) -> None:
        self.quotas = quotas
        self.clock = clock
        self.check_concurrency = concurrency
        self.throttles: Counter[str] = Counter()
        self.start_bucket = TokenBucket(quotas.sfn_start_bucket, quotas.sfn_start_refill, clock.now)
        self.express_bucket = TokenBucket(quotas.sfn_express_start_bucket, quotas.sfn_express_start_refill, clock.now)
        self.transition_bucket = TokenBucket(quotas.sfn_transition_bucket, quotas.sfn_transition_refill, clock.now)
        self.express_arns: set[str] = set()
        self.queue_limits: dict[str, int] = {}  # queue name -> MaximumMessageSize
        self.reserved: dict[str, int] = {}  # function name -> ReservedConcurrentExecutions
        self.in_flight: Counter[str] = Counter()
        self.started: dict[str, float] = {}  # execution name -> when StartExecution got its token
        self.finished: dict[str, float] = {}  # execution name -> when its program ended (simulated)
        self.transitions = 0
        self.transition_waiters = 0  # executions blocked on an empty StateTransition bucket
        self._lock = threading.Lock()
        self._held = threading.local()
        #: Where each throttle is published as the service's CloudWatch metric (Throttles, ExecutionThrottled).
        self.service: ServiceMetrics = getattr(deployment, "service_metrics", None) or ServiceMetrics(clock.now)
        if deployment is not None:
            self._read_template(deployment)
        self.checks: dict[tuple[str, str], Callable[[dict[str, Any]], None]] = {
            ("sfn", "StartExecution"): self._start_execution,
            ("sfn", "StartSyncExecution"): self._start_execution,
            ("sqs", "SendMessage"): self._send_message,
            ("sqs", "SendMessageBatch"): self._send_message_batch,
            ("dynamodb", "PutItem"): self._put_item,
            ("lambda", "Invoke"): self._invoke_payload,
        }

    def _read_template(self, deployment: Deployment) -> None:
        for lid, queue in deployment.queues.items():
            size = deployment.assembly.resource(lid).properties.get("MaximumMessageSize")
            if size is not None:
                self.queue_limits[queue["name"]] = int(size)
        for fn in deployment.functions.values():
            reserved = deployment.assembly.resource(fn.logical_id).properties.get("ReservedConcurrentExecutions")
            if reserved is not None:
                self.reserved[fn.name] = int(reserved)
        for r in deployment.assembly.resources("AWS::StepFunctions::StateMachine"):
            if r.properties.get("StateMachineType") == "EXPRESS":
                self.express_arns.add(deployment.state_machines.get(r.logical_id, ""))

    # -- checks (raise LimitExceeded) ------------------------------------------------------
    def throttle(self, key: str, error: tuple[str, int, str], **fmt: Any) -> LimitExceeded:
        with self._lock:
            self.throttles[key] += 1
        return LimitExceeded(error, **fmt)

    def _start_execution(self, params: dict[str, Any]) -> None:
        limit = int(self.quotas.sfn_payload_bytes)
        if payload_size(params.get("input", "{}")) > limit:
            raise LimitExceeded(SFN_INPUT_TOO_LARGE, limit=limit)
        bucket = self.express_bucket if params.get("stateMachineArn") in self.express_arns else self.start_bucket
        if not bucket.take():
            self.service.api_throttled("StartExecution")
            raise self.throttle("stepfunctions:StartExecution", SFN_THROTTLED)
        self.started.setdefault(str(params.get("name", "")), self.clock.now())

    def _queue_limit(self, url: str) -> int:
        return self.queue_limits.get(str(url).rsplit("/", 1)[-1], int(self.quotas.sqs_message_bytes))

    def _send_message(self, params: dict[str, Any]) -> None:
        limit = self._queue_limit(params.get("QueueUrl", ""))
        if message_size(params.get("MessageBody"), params.get("MessageAttributes")) > limit:
            raise LimitExceeded(SQS_TOO_LONG, limit=limit)

    def _send_message_batch(self, params: dict[str, Any]) -> None:
        limit = self._queue_limit(params.get("QueueUrl", ""))
        sizes = [message_size(e.get("MessageBody"), e.get("MessageAttributes")) for e in params.get("Entries", [])]
        if any(s > limit for s in sizes):
            raise LimitExceeded(SQS_TOO_LONG, limit=limit)
        # The batch's total is SQS's own payload limit, not the queue's MaximumMessageSize: "The maximum
        # allowed individual message size and the maximum total payload size (the sum of the individual
        # lengths of all of the batched messages) are both" the service limit.
        # https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessageBatch.html
        total = int(self.quotas.sqs_message_bytes)
        if sum(sizes) > total:
            raise LimitExceeded(SQS_BATCH_TOO_LONG, limit=total)

    def _put_item(self, params: dict[str, Any]) -> None:
        if item_size(params.get("Item")) > self.quotas.dynamodb_item_bytes:
            raise LimitExceeded(DDB_ITEM_TOO_LARGE)

    def _invoke_payload(self, params: dict[str, Any]) -> None:
        limit = int(self.quotas.lambda_sync_payload_bytes)
        if payload_size(params.get("Payload", b"")) > limit:
            raise LimitExceeded(LAMBDA_TOO_LARGE, limit=limit)

    # -- Step Functions state transitions ----------------------------------------------------
    def transition(self, state_machine_arn: str) -> None:
        """A Standard execution enters a state: take a StateTransition token, or wait for one.

        AWS does not fail a throttled transition: the execution is slowed (CloudWatch
        ``ThrottledEvents`` in the ``AWS/States`` ``StateTransition`` metrics), so we count the
        throttle once and wait, on the run's clock, until the bucket refills. Express workflows
        have no state-transition quota. A ``Retry`` attempt inside a state is not a new entry here.
        """
        if state_machine_arn in self.express_arns:
            return
        with self._lock:
            self.transitions += 1
        if self.transition_bucket.take():
            return
        with self._lock:
            self.throttles["stepfunctions:StateTransition"] += 1
            self.transition_waiters += 1
        self.service.state_transition_throttled(state_machine_arn)
        try:
            while not self.transition_bucket.take():
                self.clock.wait_for_move(TRANSITION_WAIT_SECONDS)
        finally:
            with self._lock:
                self.transition_waiters -= 1

    def runnable_executions(self) -> int:
        """Executions started and not ended that are not waiting for a StateTransition token
        (they are running a state: a stepped clock must let them reach their next wait first)."""
        with self._lock:
            return len(self.started) - len(self.finished) - self.transition_waiters

    def execution_finished(self, name: str) -> None:
        self.finished.setdefault(name, self.clock.now())

    # -- Lambda concurrency ------------------------------------------------------------------
    def acquire(self, function_name: str) -> bool:
        """Take a concurrency slot for ``function_name`` (False: the function or account is at its limit)."""
        if not self.check_concurrency:
            return True
        with self._lock:
            total = sum(self.in_flight.values())
            reserved = self.reserved.get(function_name)
            unreserved_used = sum(n for f, n in self.in_flight.items() if f not in self.reserved)
            pool = self.quotas.lambda_concurrency - sum(self.reserved.values())
            if reserved is not None:
                ok = self.in_flight[function_name] < reserved
            else:
                ok = unreserved_used < pool and total < self.quotas.lambda_concurrency
            if not ok:
                self.throttles["lambda:Invoke"] += 1
                self.service.lambda_throttled(function_name)
                return False
            self.in_flight[function_name] += 1
            return True

    def release(self, function_name: str) -> None:
        if not self.check_concurrency:
            return
        with self._lock:
            self.in_flight[function_name] -= 1

    @contextmanager
    def slot(self, function_name: str) -> Iterator[None]:
        """Hold a slot for the block; raises :class:`LimitExceeded` (TooManyRequestsException) if none is free."""
        held: set[str] = getattr(self._held, "names", set())
        if function_name in held:  # the Invoke API call already took it (moto -> LocalFunction.invoke)
            yield
            return
        if not self.acquire(function_name):
            raise LimitExceeded(LAMBDA_THROTTLED)
        self._held.names = held | {function_name}
        try:
            yield
        finally:
            self._held.names = held
            self.release(function_name)


@contextmanager
def enforce_limits(enforcer: LimitEnforcer) -> Iterator[LimitEnforcer]:
    """While active, every boto3 call and every in-process invocation is checked against ``enforcer``."""
    import botocore.client
    from moto.stepfunctions.parser.asl.component.program.program import Program
    from moto.stepfunctions.parser.asl.component.state.state import CommonStateField

    from local_cloud.lambda_runtime import LocalFunction, error_payload

    original_call = botocore.client.BaseClient._make_api_call
    original_invoke = LocalFunction.invoke
    original_state_body = CommonStateField._eval_body
    original_program_body = Program._eval_body
    services = {"states": "sfn", "sqs": "sqs", "dynamodb": "dynamodb", "lambda": "lambda"}

    def make_api_call(client: Any, operation: str, params: Any) -> Any:
        service = services.get(client.meta.service_model.endpoint_prefix)
        check = enforcer.checks.get((service, operation)) if service else None
        if check is None:
            return original_call(client, operation, params)
        try:
            check(params)
            if service == "lambda":
                name = str(params.get("FunctionName", "")).rsplit(":", 1)[-1]
                with enforcer.slot(name):
                    return original_call(client, operation, params)
        except LimitExceeded as exc:
            raise client_error(client, operation, exc) from None
        return original_call(client, operation, params)

    def invoke(fn: LocalFunction, event: Any) -> tuple[str, bool]:
        try:
            with enforcer.slot(fn.name):
                return original_invoke(fn, event)
        except LimitExceeded as exc:  # the event source mapping's invocation was throttled
            return json.dumps(error_payload(exc) | {"errorType": exc.code}), True

    def state_body(state: Any, env: Any) -> None:
        # moto's interpreter enters every state through CommonStateField._eval_body (canary:
        # tests/test_limits.py); a Map/Parallel branch's states are entered the same way.
        enforcer.transition(_execution_data(env)["StateMachine"]["Id"])
        original_state_body(state, env)

    def program_body(program: Any, env: Any) -> None:
        try:
            original_program_body(program, env)
        finally:
            if not env.is_frame():  # the execution itself, not a Map/Parallel branch
                enforcer.execution_finished(_execution_data(env)["Execution"]["Name"])

    with ExitStack() as stack:
        stack.enter_context(mock.patch.object(botocore.client.BaseClient, "_make_api_call", make_api_call))
        stack.enter_context(mock.patch.object(LocalFunction, "invoke", invoke))
        stack.enter_context(mock.patch.object(CommonStateField, "_eval_body", state_body))
        stack.enter_context(mock.patch.object(Program, "_eval_body", program_body))
        yield enforcer


def _execution_data(env: Any) -> Any:
    """moto's context object for the running execution (``Execution.Name``, ``StateMachine.Id``)."""
    return env.states.context_object.context_object_data
