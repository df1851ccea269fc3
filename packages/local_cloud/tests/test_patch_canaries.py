"""Canaries for every patch in :mod:`local_cloud.patches`: each fails loudly when an upgrade of moto,
Powertools or botocore moves what the emulator patches (the attribute, its signature, or the
behaviour the patch relies on). The registry names its canary; a test checks the names exist.
(The patches an application adds on top keep their canaries with it: this repository's app, in
``tests/ops/test_harness_patch_canaries.py``.)
"""

from __future__ import annotations

import concurrent.futures
import inspect
import json
import time
import types
from pathlib import Path
from typing import Any
from unittest import mock

import boto3
import botocore.client
import botocore.endpoint
import pytest
from botocore.exceptions import ClientError
from clocks import StepClock
from moto import mock_aws

from local_cloud import patches as emulator
from local_cloud.calls import count_aws_calls
from local_cloud.capture import LineCapture, capture_stdout
from local_cloud.clock import SimClock, WallTime
from local_cloud.environment import sqs_on_clock
from local_cloud.faults import throttle_dynamodb
from local_cloud.lambda_runtime import LocalFunction, route_invocations
from local_cloud.moto_patches import (
    atomic_dynamodb,
    dynamodb_task_timeout,
    sfn_execution_running_from_start,
    sfn_task_timeout_on_clock,
    states_all_excludes_terminal_errors,
)
from local_cloud.moto_speed import JSON_PATH_MODULES, cached_asl_parse, cached_json_path_parse
from local_cloud.patch_scan import unregistered_patches
from local_cloud.patch_types import MIN_GATE_SHARE
from local_cloud.patches_speed import SPEED_CHANGES
from local_cloud.template import ACCOUNT, REGION

#: The emulator package's sources.
PATCHING_SOURCES = (Path(__file__).resolve().parents[1] / "src" / "local_cloud",)
#: Our own classes the emulator patches (not third-party internals).
OWN_TARGETS = {"LocalFunction", "SqsPoller"}


def _params(fn: Any) -> list[str]:
    return list(inspect.signature(fn).parameters)


def _table(ddb: Any, name: str, range_key: bool = False) -> None:
    keys = [{"AttributeName": "pk", "KeyType": "HASH"}]
    attrs = [{"AttributeName": "pk", "AttributeType": "S"}]
    if range_key:
        keys.append({"AttributeName": "sk", "KeyType": "RANGE"})
        attrs.append({"AttributeName": "sk", "AttributeType": "S"})
    ddb.create_table(TableName=name, KeySchema=keys, AttributeDefinitions=attrs, BillingMode="PAY_PER_REQUEST")


# -- the registry itself -----------------------------------------------------------------------------
def test_registry_every_target_resolves_today() -> None:
    for patch in emulator.PATCHES:
        for module, attribute in emulator.targets(patch):
            if attribute == "print":  # created by the patch (a module global shadowing the builtin)
                continue
            assert emulator.resolve(module, attribute) is not None, f"{patch.name}: {module}:{attribute} moved"


def test_registry_every_canary_named_exists_in_this_module() -> None:
    names = {name for name in globals() if name.startswith("test_canary_")}
    for patch in emulator.PATCHES:
        assert patch.canary in names, f"{patch.name} names a missing canary {patch.canary}"


def test_registry_lists_every_attribute_the_emulator_patches() -> None:
    """A ``mock.patch.object(owner, "attr", ...)`` in local_cloud on third-party code is registered."""
    registered = [target for p in emulator.PATCHES for target in emulator.targets(p)]
    assert unregistered_patches(PATCHING_SOURCES, registered, OWN_TARGETS) == []


def test_registry_speed_patches_reach_moto_only() -> None:
    """Speed alone never justifies patching the interpreter or botocore (issue 43): a speed patch targets moto."""
    for patch in emulator.PATCHES:
        if patch.kind == "speed":
            for module, attribute in emulator.targets(patch):
                assert module.split(".")[0] == "moto", f"{patch.name} patches {module}:{attribute} for speed"


#: Calls that tune the interpreter itself (the collector, thread switching, recursion, frame chunks).
INTERPRETER_TUNING = ("gc.freeze", "gc.set_threshold", "gc.disable", "sys.setswitchinterval", "_bootstrap_inner")


def test_registry_no_source_tunes_the_interpreter() -> None:
    """No emulator module tunes CPython for speed (the collector, thread switching, frame chunks)."""
    found = [
        f"{path.name}: {call}"
        for source in PATCHING_SOURCES
        for path in sorted(source.rglob("*.py"))
        for call in INTERPRETER_TUNING
        if call in path.read_text()
    ]
    assert found == []


def test_registry_only_speed_patches_can_be_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(emulator.DISABLE_ENV, "asl_parse_cache,atomic_dynamodb")
    assert emulator.enabled("asl_parse_cache") is False
    assert emulator.enabled("atomic_dynamodb") is True  # correctness: never off
    with pytest.raises(KeyError):
        emulator.enabled("no_such_patch")


def test_registry_speed_switches_off_every_speed_patch_and_nothing_else(monkeypatch: pytest.MonkeyPatch) -> None:
    """One switch runs the emulator without its speed-only patches (to measure what they save)."""
    monkeypatch.setenv(emulator.DISABLE_ENV, "speed")
    speed = [p.name for p in emulator.PATCHES if p.kind == "speed"]
    assert speed and not any(emulator.enabled(name) for name in speed)
    assert all(emulator.enabled(p.name) for p in emulator.PATCHES if p.kind != "speed")
    monkeypatch.delenv(emulator.DISABLE_ENV)
    assert all(emulator.enabled(p.name) for p in emulator.PATCHES)  # default: every patch on


def test_registry_every_speed_patch_is_part_of_a_change_that_saves_a_tenth_of_the_gate() -> None:
    """Issue 43's rule: a speed patch stays only as part of one upstreamable change of moto that saves at least
    10% of ``make test``'s end-to-end time, measured; a change below it is deleted, not kept."""
    changes = {change.name: change for change in SPEED_CHANGES}
    speed = [p for p in emulator.PATCHES if p.kind == "speed"]
    assert speed and all(p.change in changes for p in speed), [p.name for p in speed if p.change not in changes]
    assert all(p.change == "" for p in emulator.PATCHES if p.kind != "speed")
    for change in SPEED_CHANGES:
        assert change.saves_share >= MIN_GATE_SHARE, f"{change.name} saves {change.saves_share:.1%} of make test"
        assert any(p.change == change.name for p in speed), f"{change.name} has no patch"


def test_registry_a_change_name_switches_off_its_patches_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """One name switches a whole change off, to measure it as the rule measures it."""
    (change, *_) = SPEED_CHANGES
    monkeypatch.setenv(emulator.DISABLE_ENV, change.name)
    for patch in emulator.PATCHES:
        assert emulator.enabled(patch.name) is (patch.change != change.name), patch.name


# -- correctness -------------------------------------------------------------------------------------
def test_canary_atomic_dynamodb_serialises_moto_item_writes(aws: None) -> None:
    """16 threads race one conditional put: exactly one wins (moto alone can let two through)."""
    ddb = boto3.client("dynamodb", region_name=REGION)
    _table(ddb, "race")
    wins: list[int] = []

    def put(i: int) -> None:
        try:
            ddb.put_item(
                TableName="race",
                Item={"pk": {"S": "one"}, "writer": {"N": str(i)}},
                ConditionExpression="attribute_not_exists(pk)",
            )
            wins.append(i)
        except ddb.exceptions.ConditionalCheckFailedException:
            pass

    with atomic_dynamodb():
        from moto.dynamodb.models import DynamoDBBackend

        assert all(hasattr(getattr(DynamoDBBackend, n), "__wrapped__") for n in ("put_item", "update_item"))
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            list(pool.map(put, range(16)))
    assert len(wins) == 1


# -- emulation ---------------------------------------------------------------------------------------
def test_canary_lambda_invoke_reaches_the_in_process_function(aws: None, tmp_path: Path) -> None:
    (tmp_path / "h.py").write_text("def handler(event, context):\n    return {'echo': event['x']}\n")
    fn = LocalFunction("Fn", "local-fn", tmp_path, "h.handler", {}, 3.0, 128, [], SimClock())
    role = boto3.client("iam").create_role(RoleName="r", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    lam = boto3.client("lambda", region_name=REGION)
    lam.create_function(
        FunctionName="local-fn", Runtime="python3.12", Role=role, Handler="h.handler", Code={"ZipFile": b"PK"}
    )
    from moto.awslambda.models import LambdaFunction

    assert _params(LambdaFunction._invoke_lambda) == ["self", "event"]
    with route_invocations({"local-fn": fn}):
        payload = lam.invoke(FunctionName="local-fn", Payload=json.dumps({"x": 7}))["Payload"].read()
    assert json.loads(payload) == {"echo": 7}
    assert fn.invocations == 1


def test_canary_make_api_call_sees_operation_and_api_params(aws: None, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _params(botocore.client.BaseClient._make_api_call) == ["self", "operation_name", "api_params"]
    seen: list[tuple[str, dict[str, Any]]] = []
    original = botocore.client.BaseClient._make_api_call

    def spy(client: Any, operation: str, params: Any) -> Any:
        seen.append((operation, dict(params)))
        return original(client, operation, params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", spy)
    boto3.client("sqs", region_name=REGION).create_queue(QueueName="q")
    assert seen == [("CreateQueue", {"QueueName": "q"})]


def test_canary_boto_client_for_is_the_lambda_task_client_factory() -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils
    from moto.stepfunctions.parser.asl.utils import boto_client

    from local_cloud.moto_patches import step_functions_client_modules

    assert _params(lambda_eval_utils.boto_client_for) == ["region", "service", "state_credentials"]
    modules = step_functions_client_modules()
    assert lambda_eval_utils in modules
    for module in modules:  # Lambda tasks and the direct service integrations (DynamoDB, SQS, SNS, ...)
        assert module.boto_client_for is boto_client.boto_client_for, module.__name__
        # Looked up on the module at call time (so patching the module attribute takes effect).
        assert "boto_client_for(" in inspect.getsource(module), module.__name__


def test_canary_thread_pool_submit_signature() -> None:
    parameters = inspect.signature(concurrent.futures.ThreadPoolExecutor.submit).parameters
    assert list(parameters) == ["self", "fn", "args", "kwargs"]
    assert parameters["fn"].kind is inspect.Parameter.POSITIONAL_ONLY


def test_canary_sfn_interpreter_enters_states_through_eval_body() -> None:
    """Behaviour is pinned by test_limits.py (StateTransition bucket); here, the shapes."""
    from moto.stepfunctions.parser.asl.component.program.program import Program
    from moto.stepfunctions.parser.asl.component.state.state import CommonStateField
    from moto.stepfunctions.parser.asl.eval.environment import Environment

    assert "_eval_body" in vars(CommonStateField) and "_eval_body" in vars(Program)
    assert _params(CommonStateField._eval_body) == ["self", "env"]
    assert _params(Program._eval_body) == ["self", "env"]
    assert callable(Environment.is_frame)


# -- simulated time ----------------------------------------------------------------------------------
def test_canary_sfn_retrier_sleeps_through_module_time() -> None:
    from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl

    assert retrier_decl.time is time
    assert "time.sleep(" in inspect.getsource(retrier_decl)


def test_canary_botocore_endpoint_sleeps_through_module_time() -> None:
    assert botocore.endpoint.time is time
    assert "time.sleep(handler_response)" in inspect.getsource(botocore.endpoint.Endpoint._needs_retry)


def test_canary_sqs_delay_follows_the_patched_clock(aws: None) -> None:
    clock = StepClock()
    with sqs_on_clock(clock):
        sqs = boto3.client("sqs", region_name=REGION)
        url = sqs.create_queue(QueueName="delayed")["QueueUrl"]
        sqs.send_message(QueueUrl=url, MessageBody="m", DelaySeconds=60)
        assert sqs.receive_message(QueueUrl=url).get("Messages", []) == []
        clock.t += 61
        assert [m["Body"] for m in sqs.receive_message(QueueUrl=url)["Messages"]] == ["m"]


def test_canary_powertools_metrics_stamp_dt_datetime_now() -> None:
    """metrics_clock replaces the EMF provider's ``dt``: its Timestamp must come from dt.datetime.now()."""
    from aws_lambda_powertools.metrics.provider.cloudwatch_emf import cloudwatch

    from local_cloud.clock import SimClock
    from local_cloud.simtime import simulated_now

    clock = SimClock()
    clock.advance(3600)
    with simulated_now(clock):
        provider = cloudwatch.AmazonCloudWatchEMFProvider(namespace="Canary", service="canary")
        provider.add_metric(name="Seen", unit="Count", value=1)
        stamped = provider.serialize_metric_set()["_aws"]["Timestamp"]
    assert abs(stamped / 1000 - clock.now()) < 5


def test_canary_powertools_metrics_share_class_level_dicts() -> None:
    """metrics_per_invocation replaces Metrics' class-level dicts: every instance and its EMF provider use them."""
    from aws_lambda_powertools.metrics.metrics import Metrics

    from local_cloud.powertools_state import SHARED, PerInvocationDict, metrics_per_invocation

    first, second = Metrics(namespace="Canary", service="one"), Metrics(namespace="Canary", service="two")
    assert first.metric_set is second.metric_set is Metrics._metrics
    assert first.provider.metric_set is Metrics._metrics and first.provider.dimension_set is Metrics._dimensions
    with metrics_per_invocation():
        assert all(isinstance(getattr(Metrics, name), PerInvocationDict) for name in SHARED)
        assert Metrics(namespace="Canary", service="three").provider.metric_set is Metrics._metrics


def test_canary_os_environ_reads_and_writes_through_its_data_mapping() -> None:
    """function_environment replaces os.environ._data: every read, write, deletion and listing of os.environ
    (os.getenv included) goes through that one mapping."""
    import os

    from local_cloud.function_env import InvocationEnviron, function_environment

    assert isinstance(vars(os.environ)["_data"], dict)
    key = os.environ.encodekey("CANARY_RECORDED")
    with mock.patch.object(os.environ, "_data", InvocationEnviron(dict(vars(os.environ)["_data"]))) as storage:
        os.environ["CANARY_RECORDED"] = "1"
        assert key in storage.base and os.getenv("CANARY_RECORDED") == "1" and "CANARY_RECORDED" in list(os.environ)
        del os.environ["CANARY_RECORDED"]
        assert key not in storage.base and len(os.environ) == len(storage.base)
    with function_environment({"CANARY_ONLY_HERE": "1"}):
        assert isinstance(vars(os.environ)["_data"], InvocationEnviron)
        assert os.getenv("CANARY_ONLY_HERE") == "1" and "CANARY_ONLY_HERE" in dict(os.environ)
    assert isinstance(vars(os.environ)["_data"], dict) and "CANARY_ONLY_HERE" not in os.environ


def test_canary_powertools_idempotency_reads_dt_datetime_now() -> None:
    import datetime

    from aws_lambda_powertools.utilities.idempotency.persistence import base, datarecord, dynamodb

    for module in (base, dynamodb, datarecord):
        assert module.dt is datetime, f"{module.__name__} no longer imports datetime as dt"
    assert "dt.datetime.now(" in inspect.getsource(base)


# -- fault injection ---------------------------------------------------------------------------------
def test_canary_moto_backend_item_methods_signatures(aws: None) -> None:
    """faults.throttle_dynamodb reads (table_name, item_attrs | key) positionally or by keyword."""
    from moto.dynamodb.models import DynamoDBBackend

    assert _params(DynamoDBBackend.put_item)[:3] == ["self", "table_name", "item_attrs"]
    assert _params(DynamoDBBackend.update_item)[:3] == ["self", "table_name", "key"]
    assert _params(DynamoDBBackend.delete_item)[:3] == ["self", "table_name", "key"]
    assert _params(DynamoDBBackend.get_item)[:2] == ["self", "table_name"]
    assert _params(DynamoDBBackend.query)[:2] == ["self", "table_name"]
    assert _params(DynamoDBBackend.transact_write_items) == ["self", "transact_items"]
    ddb = boto3.client("dynamodb", region_name=REGION)
    _table(ddb, "t")
    seen: list[tuple[str, str, dict[str, Any]]] = []

    def predicate(method: str, table: str, attrs: dict[str, Any]) -> bool:
        seen.append((method, table, attrs))
        return True

    with throttle_dynamodb(predicate) as counter, pytest.raises(ClientError) as raised:
        ddb.put_item(TableName="t", Item={"pk": {"S": "a"}})
    assert raised.value.response["Error"]["Code"] == "ProvisionedThroughputExceededException"
    # botocore retries a throttled call: every attempt reached the backend with the same arguments.
    assert seen and set(map(str, seen)) == {str(("put_item", "t", {"pk": {"S": "a"}}))}
    assert counter.injected == {"throttle": len(seen)}


# -- observation -------------------------------------------------------------------------------------
def test_canary_count_aws_calls_counts_each_moto_request(aws: None) -> None:
    from moto.core.botocore_stubber import BotocoreStubber

    assert _params(BotocoreStubber.__call__) == ["self", "event_name", "request", "kwargs"]
    sqs = boto3.client("sqs", region_name=REGION)
    with count_aws_calls() as calls:
        sqs.list_queues()
        sqs.list_queues()
    assert calls.operations() == {"sqs:ListQueues": 2}


def test_canary_emf_flush_prints_through_the_module_print() -> None:
    from aws_lambda_powertools.metrics import Metrics, MetricUnit
    from aws_lambda_powertools.metrics.provider.cloudwatch_emf import cloudwatch as emf

    assert "print(" in inspect.getsource(emf.AmazonCloudWatchEMFProvider.flush_metrics)
    capture = LineCapture()
    metrics = Metrics(namespace="Canary", service="canary")
    with capture_stdout(capture):
        metrics.add_metric(name="Seen", unit=MetricUnit.Count, value=1)
        metrics.flush_metrics()
    assert [doc["Seen"] for doc in capture.records()[1]] == [[1.0]]


# -- speed -------------------------------------------------------------------------------------------
def test_canary_sqs_sent_timestamp_is_the_send_time(aws: None) -> None:
    """alarms.oldest_age reads Message.sent_timestamp (ms) from moto's in-process queue."""
    from moto.sqs.models import sqs_backends

    sqs = boto3.client("sqs", region_name=REGION)
    url = sqs.create_queue(QueueName="aged")["QueueUrl"]
    before = time.time() * 1000
    sqs.send_message(QueueUrl=url, MessageBody="x")
    (message,) = list(sqs_backends[ACCOUNT][REGION].queues["aged"]._messages)
    assert before - 1000 <= float(message.sent_timestamp or 0) <= time.time() * 1000 + 1000


def test_canary_asl_parse_is_a_pure_static_method() -> None:
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    assert isinstance(vars(AmazonStateLanguageParser)["parse"], staticmethod)
    definition = json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}})
    with cached_asl_parse():
        first = AmazonStateLanguageParser.parse(definition)
        assert AmazonStateLanguageParser.parse(definition) is first  # parsed once
    program, _ = first
    assert type(program).__name__ == "Program"


def test_canary_json_path_parse_is_a_module_level_pure_function() -> None:
    import importlib

    data = {"order_id": "o-1", "items": [{"sku": "a"}, {"sku": "b"}], "out": {}}
    for name in JSON_PATH_MODULES:
        module = importlib.import_module(name)
        assert callable(module.parse) and module.parse.__module__.startswith("jsonpath_ng")
    with cached_json_path_parse():
        from moto.stepfunctions.parser.asl.utils import json_path

        assert json_path.parse("$.items[*].sku") is json_path.parse("$.items[*].sku")  # parsed once
        # the same expression evaluated twice, on different data, gives each its own answer
        assert json_path.extract_json("$.items[*].sku", data) == ["a", "b"]
        assert json_path.extract_json("$.items[*].sku", {"items": [{"sku": "c"}]}) == ["c"]
        from moto.stepfunctions.parser.asl.component.common.path import result_path

        expr = result_path.parse("$.out.result")
        first = expr.update_or_create({"out": {}}, 1)
        assert expr.update_or_create({"out": {}}, 2) == {"out": {"result": 2}} and first == {"out": {"result": 1}}


def test_canary_sqs_delayed_until_is_the_send_time_plus_the_delay(aws: None) -> None:
    """The event loop's jump reads ``Message.delayed_until`` (ms, moto's clock) from the queue's messages."""
    from local_cloud.clock import SimClock
    from local_cloud.environment import sqs_on_clock
    from local_cloud.event_sources import EventSourceSpec, SqsPoller

    sqs = boto3.client("sqs", region_name=REGION)
    url = sqs.create_queue(QueueName="delayed")["QueueUrl"]
    clock = SimClock()  # wall time plus an offset
    spec = EventSourceSpec(url, "arn:aws:sqs:us-east-1:123456789012:delayed", None, 10, True, 30, None)  # type: ignore[arg-type]
    poller = SqsPoller(spec, clock)
    with sqs_on_clock(clock):
        assert poller.next_delayed_at() is None
        sent = clock.now()
        sqs.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=300)
        sqs.send_message(QueueUrl=url, MessageBody="sooner", DelaySeconds=40)
        sqs.send_message(QueueUrl=url, MessageBody="now")
        assert abs(poller.next_delayed_at() - (sent + 40)) < 1  # type: ignore[operator]
        clock.advance(40.0)
        assert abs(poller.next_delayed_at() - (sent + 300)) < 1  # type: ignore[operator]
        bodies = [m["Body"] for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])]
        assert sorted(bodies) == ["now", "sooner"]


def test_canary_backend_scan_equals_the_api_scan(aws: None) -> None:
    from decimal import Decimal

    from local_cloud import tables as report

    ddb = boto3.client("dynamodb", region_name=REGION)
    _table(ddb, "scan-a")
    _table(ddb, "scan-b", range_key=True)
    for i in range(30):
        ddb.put_item(
            TableName="scan-a",
            Item={
                "pk": {"S": f"o-{i:03}"},
                "status": {"S": "COMPLETED"},
                "n": {"N": str(i)},
                "history": {"L": [{"M": {"at": {"N": "1.5"}, "to": {"S": "RESERVED"}}}, {"NULL": True}]},
                "flags": {"SS": ["a", "b"]},
                "ok": {"BOOL": i % 2 == 0},
                "blob": {"B": bytes([i, 0, 255])},
            },
        )
        ddb.put_item(TableName="scan-b", Item={"pk": {"S": f"p-{i % 3}"}, "sk": {"S": f"s-{i:03}"}, "v": {"N": "7"}})
    for table in ("scan-a", "scan-b"):
        for attributes in ((), ("pk", "status", "missing")):
            api = report._scan_api(table, attributes)
            backend = report._scan_backend(table, attributes)
            key = lambda item: (str(item.get("pk")), str(item.get("sk")))  # noqa: E731
            assert sorted(backend, key=key) == sorted(api, key=key) and len(api) == 30
    row = next(i for i in report._scan_backend("scan-a", ()) if i["pk"] == "o-002")
    assert row["n"] == Decimal(2) and row["blob"].value == bytes([2, 0, 255]) and row["flags"] == {"a", "b"}
    assert report.scan_all("scan-a", ("pk",))[0].keys() == {"pk"}


def test_canary_backend_history_equals_the_api_history() -> None:
    """The report's direct read of moto's Step Functions backend returns what GetExecutionHistory returns."""
    from local_cloud.histories import _from_api, _from_backend, transitions_per_execution

    definition = json.dumps(
        {"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "B"}, "B": {"Type": "Pass", "End": True}}}
    )
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        sfn = boto3.client("stepfunctions", region_name=REGION)
        machine = sfn.create_state_machine(name="m", definition=definition, roleArn=f"arn:aws:iam::{ACCOUNT}:role/r")[
            "stateMachineArn"
        ]
        for name in ("one", "two"):
            arn = sfn.start_execution(stateMachineArn=machine, name=name, input='{"token": "x"}')["executionArn"]
            deadline = time.monotonic() + 10
            while sfn.describe_execution(executionArn=arn)["status"] == "RUNNING" and time.monotonic() < deadline:
                time.sleep(0.01)
        direct, api = _from_backend(machine), _from_api(machine)
    assert [arn for arn, _ in direct] == [arn for arn, _ in api] and len(direct) == 2
    for (_, mine), (_, theirs) in zip(direct, api, strict=True):
        assert [(e["id"], e["type"]) for e in mine] == [(e["id"], e["type"]) for e in theirs]
        assert [
            json.dumps({k: v for k, v in e.items() if k != "timestamp"}, default=str, sort_keys=True) for e in mine
        ] == [json.dumps({k: v for k, v in e.items() if k != "timestamp"}, default=str, sort_keys=True) for e in theirs]
    assert transitions_per_execution(direct) == 2.0


def _error_equals_matches(error_equals: list[str], error: str) -> bool:
    """Evaluate moto's ErrorEquals for ``error`` (the body alone: the wildcard decision)."""
    from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import CustomErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.error_equals_decl import ErrorEqualsDecl
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
        StatesErrorNameType,
    )

    def name(text: str) -> Any:
        if text.startswith("States."):
            return StatesErrorName(typ=StatesErrorNameType.from_name(text))
        return CustomErrorName(text)

    env = types.SimpleNamespace(stack=[name(error)])
    ErrorEqualsDecl([name(e) for e in error_equals])._eval_body(env)  # type: ignore[arg-type]
    return bool(env.stack.pop())


def test_canary_states_all_does_not_catch_runtime_errors() -> None:
    # moto's wildcard matches everything (drop the patch once it stops doing so) ...
    assert _error_equals_matches(["States.ALL"], "States.Runtime")
    with states_all_excludes_terminal_errors():
        # ... AWS's does not match the two terminal errors (concepts-error-handling.html, States.ALL)
        assert not _error_equals_matches(["States.ALL"], "States.Runtime")
        assert not _error_equals_matches(["States.ALL"], "States.DataLimitExceeded")
        assert _error_equals_matches(["States.ALL"], "States.Timeout")
        assert _error_equals_matches(["States.ALL"], "Lambda.Unknown")
        assert _error_equals_matches(["States.Runtime"], "States.Runtime")
    assert _error_equals_matches(["States.ALL"], "States.Runtime")


def test_canary_dynamodb_task_timeout_is_states_timeout() -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_dynamodb import (
        StateTaskServiceDynamoDB,
    )

    task: Any = StateTaskServiceDynamoDB.__new__(StateTaskServiceDynamoDB)
    timed_out = types.SimpleNamespace(error_name=types.SimpleNamespace(error_name="States.Timeout"))
    task._get_timed_out_failure_event = lambda env: timed_out
    task.resource = types.SimpleNamespace(api_action="updateItem", service_name="dynamodb")
    env: Any = types.SimpleNamespace(
        next_state_name="MarkCompleted", event_history_context=types.SimpleNamespace(source_event_id=0)
    )
    from_error: Any = StateTaskServiceDynamoDB._from_error
    # moto renames its own timeout (drop the patch once it stops doing so) ...
    assert from_error(task, env, TimeoutError()).error_name.error_name == "DynamoDB.AmazonDynamoDBException"
    with dynamodb_task_timeout():
        # ... AWS reports States.Timeout
        assert StateTaskServiceDynamoDB._from_error(task, env, TimeoutError()) is timed_out


def test_canary_sfn_task_errors_named_as_aws() -> None:
    """moto names a function-ARN Lambda task's throttle ``Exception`` and an SQS task's refusal
    ``SQS.SdkClientException`` (drop the patch once it names them as AWS); patched, every Lambda, SQS and
    DynamoDB task error is ``<Service>.<ErrorName>`` (local_cloud.sfn_task_errors; executions in
    tests/test_task_errors.py)."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sqs import (
        StateTaskServiceSqs,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task_lambda import StateTaskLambda

    from local_cloud.sfn_task_errors import aws_task_error_names, task_classes

    def error_of(cls: Any, exc: Exception) -> str:
        task: Any = cls.__new__(cls)
        task.resource = types.SimpleNamespace(api_action="sendMessage", service_name="sqs", condition=None)
        env: Any = types.SimpleNamespace(
            next_state_name="T", event_history_context=types.SimpleNamespace(source_event_id=0)
        )
        return str(cls._from_error(task, env, exc).error_name.error_name)

    throttled = ClientError(
        {"Error": {"Code": "TooManyRequestsException", "Message": "Rate Exceeded."}, "ResponseMetadata": {}}, "Invoke"
    )
    refused = ClientError({"Error": {"Code": "InvalidParameterValue", "Message": "m"}, "ResponseMetadata": {}}, "Send")
    assert [_params(cls.__dict__["_from_error"]) for cls, _, _ in task_classes()] == [["self", "env", "ex"]] * 4
    assert (error_of(StateTaskLambda, throttled), error_of(StateTaskServiceSqs, refused)) == (
        "Exception",
        "SQS.SdkClientException",
    )
    with aws_task_error_names():
        assert error_of(StateTaskLambda, throttled) == "Lambda.TooManyRequestsException"
        assert error_of(StateTaskServiceSqs, refused) == "SQS.AmazonSQSException"


def test_canary_start_execution_keeps_the_trace_header() -> None:
    """moto's StartExecution still drops ``traceHeader`` (else the patch is no longer needed); patched, the
    execution keeps it as AWS does and a header over 256 characters is refused."""
    from local_cloud.trace_header import start_execution_trace_header

    definition = json.dumps({"StartAt": "A", "States": {"A": {"Type": "Pass", "End": True}}})
    header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        sfn = boto3.client("stepfunctions", region_name=REGION)
        machine = sfn.create_state_machine(name="m", definition=definition, roleArn=f"arn:aws:iam::{ACCOUNT}:role/r")[
            "stateMachineArn"
        ]
        plain = sfn.start_execution(stateMachineArn=machine, name="plain", traceHeader=header)["executionArn"]
        assert "traceHeader" not in sfn.describe_execution(executionArn=plain)
        with start_execution_trace_header():
            kept = sfn.start_execution(stateMachineArn=machine, name="kept", traceHeader=header)["executionArn"]
            assert sfn.describe_execution(executionArn=kept)["traceHeader"] == header
            with pytest.raises(ClientError, match="ValidationException"):
                sfn.start_execution(stateMachineArn=machine, name="long", traceHeader="x" * 257)


def test_canary_lambda_task_invocation_gets_the_executions_trace_header(tmp_path: Path) -> None:
    """moto passes no trace to a Lambda task's invocation; patched, the invocation sees the execution's
    ``traceHeader`` (as Lambda's X-Ray header on AWS), and none for an execution started without one."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils

    from local_cloud.trace_header import (
        execution_trace_header_to_tasks,
        start_execution_trace_header,
        task_trace_header,
    )

    assert _params(lambda_eval_utils.execute_lambda_function_integration) == [
        "env",
        "parameters",
        "region",
        "state_credentials",
    ]
    (tmp_path / "h.py").write_text("def handler(event, context):\n    return {}\n")
    fn = LocalFunction("Fn", "local-fn", tmp_path, "h.handler", {}, 3.0, 128, [], SimClock())
    seen: list[str | None] = []
    original = fn.invoke

    def invoke(event: Any) -> tuple[str, bool]:
        seen.append(task_trace_header())
        return original(event)

    header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        role = boto3.client("iam").create_role(RoleName="r", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        lam = boto3.client("lambda", region_name=REGION)
        arn = lam.create_function(
            FunctionName="local-fn", Runtime="python3.12", Role=role, Handler="h.handler", Code={"ZipFile": b"PK"}
        )["FunctionArn"]
        definition = json.dumps({"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": arn, "End": True}}})
        sfn = boto3.client("stepfunctions", region_name=REGION)
        machine = sfn.create_state_machine(name="m", definition=definition, roleArn=role)["stateMachineArn"]
        with (
            mock.patch.object(fn, "invoke", invoke),
            route_invocations({"local-fn": fn}),
            start_execution_trace_header(),
            execution_trace_header_to_tasks(),
        ):
            for name, kwargs in (("traced", {"traceHeader": header}), ("plain", {})):
                execution = sfn.start_execution(stateMachineArn=machine, name=name, **kwargs)["executionArn"]
                deadline = time.monotonic() + 10
                while sfn.describe_execution(executionArn=execution)["status"] == "RUNNING":
                    assert time.monotonic() < deadline
                    time.sleep(0.05)
    assert seen == [header, None]


def _unstarted_execution() -> Any:
    """An execution as moto's StartExecution builds it and lists it, before its worker starts."""
    import datetime

    from moto.stepfunctions.parser.backend.execution import Execution

    fields: dict[str, Any] = dict(
        name="race",
        sm_type=None,
        role_arn=f"arn:aws:iam::{ACCOUNT}:role/r",
        exec_arn=f"arn:aws:states:{REGION}:{ACCOUNT}:execution:sm:race",
        account_id=ACCOUNT,
        region_name=REGION,
        state_machine=types.SimpleNamespace(arn=f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:sm"),
        start_date=datetime.datetime.now(tz=datetime.UTC),
        cloud_watch_logging_session=None,
        input_data="{}",
        trace_header=None,
        activity_store={},
    )
    return Execution(**fields)


def test_canary_sfn_execution_is_listed_running_from_its_start() -> None:
    # moto appends the execution to its state machine before it sets the status (drop the patch once
    # it does not): a ListExecutions in between (the alarm evaluator, the runner) raised AttributeError
    # and killed a chaos shard under load ...
    with pytest.raises(AttributeError):
        _ = _unstarted_execution().status
    with sfn_execution_running_from_start():
        # ... on AWS StartExecution returns a RUNNING execution (API_StartExecution.html): listed, it is RUNNING.
        assert _unstarted_execution().status == "RUNNING"
        assert _unstarted_execution().to_execution_list_item()["status"] == "RUNNING"
    with pytest.raises(AttributeError):
        _ = _unstarted_execution().status


class _StoppedClock:
    """Simulated time that does not move (the process did no work): no task may time out."""

    def now(self) -> float:
        return 1000.0


def _slow_write_outcome(slow_seconds: float, timeout_seconds: int) -> str:
    """The Catch's error (or "none") of an UpdateItem task whose moto write takes ``slow_seconds`` wall seconds."""
    from moto.dynamodb.models import DynamoDBBackend

    definition = {
        "StartAt": "W",
        "States": {
            "W": {
                "Type": "Task",
                "Resource": "arn:aws:states:::dynamodb:updateItem",
                "TimeoutSeconds": timeout_seconds,
                "Parameters": {
                    "TableName": "t",
                    "Key": {"pk": {"S": "a"}},
                    "UpdateExpression": "SET v = :v",
                    "ExpressionAttributeValues": {":v": {"S": "x"}},
                },
                "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.err", "Next": "Caught"}],
                "End": True,
            },
            "Caught": {"Type": "Pass", "End": True},
        },
    }
    original = DynamoDBBackend.update_item

    def slow(self: Any, *args: Any, **kwargs: Any) -> Any:
        time.sleep(slow_seconds)
        return original(self, *args, **kwargs)

    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        _table(boto3.client("dynamodb", region_name=REGION), "t")
        sfn = boto3.client("stepfunctions", region_name=REGION)
        machine = sfn.create_state_machine(
            name="m", definition=json.dumps(definition), roleArn=f"arn:aws:iam::{ACCOUNT}:role/r"
        )["stateMachineArn"]
        with mock.patch.object(DynamoDBBackend, "update_item", slow):
            execution = sfn.start_execution(stateMachineArn=machine)["executionArn"]
            deadline = time.monotonic() + 20
            while (described := sfn.describe_execution(executionArn=execution))["status"] == "RUNNING":
                assert time.monotonic() < deadline
                time.sleep(0.05)
    return json.loads(described.get("output", "{}")).get("err", {}).get("Error", "none")


def test_canary_sfn_task_timeout_counts_simulated_time() -> None:
    with dynamodb_task_timeout():  # the timeout named as AWS names it
        # moto waits a task's TimeoutSeconds in wall seconds (drop the patch once it does not): a write
        # slowed by the machine's load (1.5 s here) times out a 1 s task ...
        assert _slow_write_outcome(1.5, 1) == "States.Timeout"
        with sfn_task_timeout_on_clock(_StoppedClock()):
            # ... in the local run a task's timeout counts simulated time: none passed, no timeout
            assert _slow_write_outcome(1.5, 1) == "none"
        with sfn_task_timeout_on_clock(SimClock(WallTime())):
            # ... and simulated time that passes (here with the wall clock) still times a task out
            assert _slow_write_outcome(1.5, 1) == "States.Timeout"


# -- per-execution waits (docs/decisions/0026) -------------------------------------------------------
def test_canary_sfn_execution_waits_act_for_their_execution(tmp_path: Path) -> None:
    """Two executions' Retry waits (30 s each, at once) are each its own: the runner sees both executions
    waiting (keyed by their ARNs, as moto's backend lists them RUNNING) and one step of 30 s lets both on;
    a Lambda task's invocation acts for its execution; an execution's end wakes the runner."""
    from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl

    from local_cloud.clock import acting_execution
    from local_cloud.sfn_waits import execution_waits, running_executions

    assert "time.sleep(" in inspect.getsource(retrier_decl.RetrierDecl._eval_body)
    (tmp_path / "h.py").write_text("def handler(event, context):\n    raise RuntimeError('down')\n")
    clock = SimClock()
    fn = LocalFunction("Fn", "local-fn", tmp_path, "h.handler", {}, 3.0, 128, [], clock)
    acting: list[str | None] = []
    original = fn.invoke

    def invoke(event: Any) -> tuple[str, bool]:
        acting.append(acting_execution())
        return original(event)

    retry = [{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 30, "MaxAttempts": 1}]
    shim = types.SimpleNamespace(sleep=clock.sleep, time=time.time, monotonic=time.monotonic)
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        role = boto3.client("iam").create_role(RoleName="r", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        lam = boto3.client("lambda", region_name=REGION)
        arn = lam.create_function(
            FunctionName="local-fn", Runtime="python3.12", Role=role, Handler="h.handler", Code={"ZipFile": b"PK"}
        )["FunctionArn"]
        task = {"Type": "Task", "Resource": arn, "Retry": retry, "End": True}
        sfn = boto3.client("stepfunctions", region_name=REGION)
        machine = sfn.create_state_machine(
            name="m", definition=json.dumps({"StartAt": "T", "States": {"T": task}}), roleArn=role
        )["stateMachineArn"]
        with (
            mock.patch.object(fn, "invoke", invoke),
            route_invocations({"local-fn": fn}),
            mock.patch.object(retrier_decl, "time", shim),
            execution_waits(clock),
        ):
            arns = [sfn.start_execution(stateMachineArn=machine, name=n)["executionArn"] for n in ("a", "b")]
            deadline = time.monotonic() + 10
            while (target := clock.earliest_wait(running_executions())) is None:
                assert time.monotonic() < deadline, "the executions' Retry waits were not seen as theirs"
                time.sleep(0.01)
            assert sorted(running_executions()) == sorted(arns)
            seen = clock.waits_generation
            clock.advance(max(0.0, target - clock.now()))
            while any(sfn.describe_execution(executionArn=a)["status"] == "RUNNING" for a in arns):
                assert time.monotonic() < deadline, "a Retry wait did not end at its target"
                time.sleep(0.01)
    assert 29.0 < clock.simulated_seconds < 31.0  # one wait's worth, not two (each used to advance it)
    assert sorted(set(a for a in acting if a)) == sorted(arns) and len(acting) == 4
    assert clock.waits_generation > seen  # the executions' ends woke the runner


def test_canary_urllib3_retry_sleeps_through_module_time() -> None:
    """The provider clients' urllib3 ``Retry`` sleeps through its module's ``time`` (``http_retry_wait``)."""
    from urllib3.util import retry

    assert "time.sleep(backoff)" in inspect.getsource(retry.Retry._sleep_backoff)
    assert "time.sleep(retry_after)" in inspect.getsource(retry.Retry.sleep_for_retry)
