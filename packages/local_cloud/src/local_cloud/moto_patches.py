"""Make moto behave like the real services where our guarantees depend on it.

Why hand-written: real DynamoDB applies a conditional write atomically per item. moto evaluates
the condition and then stores the item as two Python steps, so two threads can both pass the
same condition. Every guarantee we test under concurrency (one side effect from 16 concurrent
deliveries) rests on that atomicity, so we serialise moto's DynamoDB writes and reads with one lock.
"""

from __future__ import annotations

import functools
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

_lock = threading.RLock()
_METHODS = ("put_item", "update_item", "delete_item", "transact_write_items", "get_item", "transact_get_items")


def _serialised(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with _lock:
            return method(*args, **kwargs)

    return wrapper


@contextmanager
def dynamodb_lock() -> Iterator[None]:
    """Hold the lock :func:`atomic_dynamodb` serialises moto's DynamoDB item operations with."""
    with _lock:
        yield


@contextmanager
def atomic_dynamodb() -> Iterator[None]:
    """Within this context moto's DynamoDB item operations run one at a time."""
    from moto.dynamodb.models import DynamoDBBackend

    with ExitStack() as stack:
        for name in _METHODS:
            original = getattr(DynamoDBBackend, name)
            stack.enter_context(mock.patch.object(DynamoDBBackend, name, _serialised(original)))
        yield


#: moto's Step Functions task modules that call AWS through a module-level ``boto_client_for``
#: (Lambda tasks, and the direct service integrations a saga may use). Patched together here and
#: by local_cloud/iam_enforce.py, so every task's AWS call gets the same client and IAM check.
_TASK = "moto.stepfunctions.parser.asl.component.state.exec.state_task"
STEP_FUNCTIONS_CLIENT_MODULES = (
    f"{_TASK}.lambda_eval_utils",
    f"{_TASK}.service.state_task_service_dynamodb",
    f"{_TASK}.service.state_task_service_sqs",
    f"{_TASK}.service.state_task_service_sns",
    f"{_TASK}.service.state_task_service_events",
    f"{_TASK}.service.state_task_service_aws_sdk",
)


def step_functions_client_modules() -> list[types.ModuleType]:
    """The modules of :data:`STEP_FUNCTIONS_CLIENT_MODULES`, imported (each binds ``boto_client_for``)."""
    import importlib

    modules = [importlib.import_module(name) for name in STEP_FUNCTIONS_CLIENT_MODULES]
    for module in modules:
        if not callable(getattr(module, "boto_client_for", None)):
            raise RuntimeError(f"{module.__name__} no longer binds boto_client_for: revisit local_cloud.moto_patches")
    return modules


@contextmanager
def cached_step_functions_clients() -> Iterator[None]:
    """moto's Step Functions interpreter builds a new boto3 client for every task it runs
    (each one re-reads service models from disk); reuse one client per service and region."""
    from moto.stepfunctions.parser.asl.utils import boto_client

    original = boto_client.boto_client_for
    cache: dict[tuple[str, str, bool], Any] = {}
    cache_lock = threading.Lock()

    def cached(region: str, service: str, state_credentials: Any = None) -> Any:
        from moto.core.models import botocore_stubber

        key = (region, service, bool(botocore_stubber.enabled))
        with cache_lock:
            if key not in cache:
                cache[key] = original(region, service, state_credentials)
            return cache[key]

    with ExitStack() as stack:
        for module in step_functions_client_modules():
            stack.enter_context(mock.patch.object(module, "boto_client_for", cached))
        yield


@contextmanager
def cached_asl_parse() -> Iterator[None]:
    """moto re-parses the state machine definition (ANTLR) for every execution; parse each
    definition once. The parsed program holds no per-execution state (that lives in moto's
    per-execution Environment), so sharing it is safe."""
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    original = AmazonStateLanguageParser.parse
    cache: dict[str, Any] = {}
    cache_lock = threading.Lock()

    def parse(definition: str) -> Any:
        with cache_lock:
            if definition not in cache:
                cache[definition] = original(definition)
            return cache[definition]

    with mock.patch.object(AmazonStateLanguageParser, "parse", staticmethod(parse)):
        yield


#: moto's modules that parse a JSONPath per evaluation, and the parser each one imported.
JSON_PATH_MODULES = (
    "moto.stepfunctions.parser.asl.utils.json_path",  # jsonpath_ng.ext.parse: InputPath, Parameters "x.$"
    "moto.stepfunctions.parser.asl.component.common.path.result_path",  # jsonpath_ng.parse: ResultPath
)


@contextmanager
def cached_json_path_parse() -> Iterator[None]:
    """moto's interpreter calls ``jsonpath_ng`` ``parse(path)`` for every path of every state it
    enters, and each call builds a new PLY parser (yacc tables). Parse each path once: a parsed
    expression holds no per-evaluation state (``find`` and ``update_or_create`` act on the data)."""
    import importlib

    with ExitStack() as stack:
        for name in JSON_PATH_MODULES:
            module = importlib.import_module(name)
            stack.enter_context(mock.patch.object(module, "parse", functools.lru_cache(maxsize=4096)(module.parse)))
        yield


@contextmanager
def cached_serializer_keys() -> Iterator[None]:
    """moto's response serializer asks six alias providers, for every attribute of every value it
    serializes, which keys to look up (a DynamoDB item of 20 attributes: ~200 provider objects).
    For a plain ``dict`` the answer depends only on the picker, the shape, the shape's current
    parent (moto re-assigns it while walking) and the key, so it is computed once per combination;
    any other object is left to moto. The lookups themselves, and their order, are unchanged."""
    from moto.core.serialize import AttributePicker, ResponseSerializer, XFormedAttributePicker

    cache: dict[tuple[Any, ...], tuple[str, ...]] = {}

    def cached(owner: type, original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def get_possible_keys(self: Any, context: Any) -> Any:
            if type(context.obj) is not dict:
                return original(self, context)
            shape = context.shape
            parent = getattr(shape, "parent", None) if shape is not None else None
            # owner: XFormedAttributePicker's method calls AttributePicker's through super().
            key = (owner, type(self), tuple(self.alias_providers), shape, parent, context.key)
            found = cache.get(key)
            if found is None:
                found = cache[key] = tuple(original(self, context))
            return iter(found)

        return get_possible_keys

    member = ResponseSerializer._serialize_structure_member
    pickers = (AttributePicker, XFormedAttributePicker)

    @functools.wraps(member)
    def serialize_structure_member(self: Any, serialized: Any, value: Any, shape: Any, key: str) -> None:
        # A DynamoDB AttributeValue has ten members and carries one: skip a member of a plain dict
        # when none of the keys its picker would try is in the dict (the picker would answer
        # None, and moto skips None). Anything else, or a first sight, goes to moto.
        picker = self._value_picker
        if type(value) is dict and type(picker) in pickers and not picker.response_transformers:
            parent = getattr(shape, "parent", None) if shape is not None else None
            keys = cache.get((type(picker), type(picker), tuple(picker.alias_providers), shape, parent, key))
            if keys is not None and not any("." in k or k in value for k in keys):
                return
        member(self, serialized, value, shape, key)

    with ExitStack() as stack:
        for cls in pickers:
            stack.enter_context(mock.patch.object(cls, "get_possible_keys", cached(cls, cls.get_possible_keys)))
        stack.enter_context(
            mock.patch.object(ResponseSerializer, "_serialize_structure_member", serialize_structure_member)
        )
        yield


@contextmanager
def item_level_transaction_rollback() -> Iterator[None]:
    """moto snapshots *whole tables* (deepcopy) before every TransactWriteItems so that it can
    roll back; with tables of thousands of items every transaction becomes O(table size). We
    snapshot only the items the transaction names and restore those on failure - the same
    all-or-nothing result, because :func:`atomic_dynamodb` already runs DynamoDB calls one at a
    time (use both together)."""
    import copy as real_copy

    from moto.dynamodb import models as ddb_models
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.dynamo_type import DynamoType
    from moto.dynamodb.models.table import Table

    def deepcopy(obj: Any, memo: Any = None) -> Any:
        return obj if isinstance(obj, Table) else real_copy.deepcopy(obj, memo)

    copy_shim = types.SimpleNamespace(deepcopy=deepcopy, copy=real_copy.copy)
    original = DynamoDBBackend.transact_write_items

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> Any:
        snapshots = []
        for entry in transact_items:
            op = next(iter(entry.values()))
            table = self.get_table(op["TableName"])
            attrs = op.get("Key") or op.get("Item") or {}
            hash_value = DynamoType(attrs[table.hash_key_attr])
            range_value = DynamoType(attrs[table.range_key_attr]) if table.range_key_attr else None
            current = table.get_item(hash_value, range_value)
            snapshots.append((table, hash_value, range_value, real_copy.deepcopy(current)))
        try:
            return original(self, transact_items)
        except Exception:
            for table, hash_value, range_value, item in reversed(snapshots):
                if range_value is None:
                    if item is None:
                        table.items.pop(hash_value, None)
                    else:
                        table.items[hash_value] = item
                elif item is None:
                    table.items.get(hash_value, {}).pop(range_value, None)
                else:
                    table.items[hash_value][range_value] = item
            raise

    with ExitStack() as stack:
        stack.enter_context(mock.patch.object(ddb_models, "copy", copy_shim))
        stack.enter_context(mock.patch.object(DynamoDBBackend, "transact_write_items", transact_write_items))
        yield


#: The most distinct expressions a parse cache keeps: the pipeline uses a few dozen, all built
#: from constant text with placeholders; a caller that builds expressions from data stops being
#: cached there instead of growing the cache.
PARSE_CACHE_LIMIT = 4096


@contextmanager
def cached_update_expressions() -> Iterator[None]:
    """moto parses an UpdateExpression twice per UpdateItem (the response handler, then the
    backend) and every validation deep-copies the tree (its nodes point at their parents).
    Parse each expression text once, and give each validation its own copy unpickled from bytes
    made at parse time: the same tree node for node (canary), about six times cheaper than
    ``deepcopy``. Nothing mutates the parsed tree itself: the response handler only reads it, and
    the validator works on its copy. A text that fails to parse raises as before (not cached)."""
    import copy as real_copy
    import pickle

    from moto.dynamodb.parsing import validators
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]

    original = UpdateExpressionParser.make.__func__
    parsed: dict[str, Any] = {}
    frozen: dict[int, bytes] = {}  # id of a cached tree (kept alive by ``parsed``) -> its pickle
    lock = threading.Lock()

    def make(cls: type, expression_str: str) -> Any:
        tree = parsed.get(expression_str)
        if tree is not None and cls is UpdateExpressionParser:
            return tree
        tree = original(cls, expression_str)
        if cls is UpdateExpressionParser and len(parsed) < PARSE_CACHE_LIMIT:
            with lock:
                if expression_str not in parsed:
                    frozen[id(tree)] = pickle.dumps(tree, pickle.HIGHEST_PROTOCOL)
                    parsed[expression_str] = tree
                tree = parsed[expression_str]
        return tree

    def deepcopy(obj: Any, memo: Any = None) -> Any:
        blob = frozen.get(id(obj)) if memo is None else None
        return pickle.loads(blob) if blob is not None else real_copy.deepcopy(obj, memo)

    with (
        mock.patch.object(UpdateExpressionParser, "make", classmethod(make)),
        mock.patch.object(validators, "deepcopy", deepcopy),
    ):
        yield


@contextmanager
def cached_condition_lexing() -> Iterator[None]:
    """moto lexes a condition, filter or key-condition expression with six regular expressions per
    token on every call. The tokens depend only on the expression text, so each text is lexed
    once; every call gets fresh token nodes (their ``children`` lists are new), and the steps
    that read the expression's names and values run as before."""
    from collections import deque

    from moto.dynamodb.comparisons import ConditionExpressionParser

    original = ConditionExpressionParser._lex_condition_expression
    lexed: dict[str, tuple[Any, ...]] = {}

    @functools.wraps(original)
    def lex(self: Any) -> Any:
        text = self.condition_expression
        tokens = lexed.get(text)
        if tokens is None:
            tokens = tuple(original(self))  # a text that does not lex raises, as before
            if len(lexed) < PARSE_CACHE_LIMIT and all(t.children == [] for t in tokens):
                lexed[text] = tokens
        node = ConditionExpressionParser.Node
        # The lexer's tokens have no children (canary): a new empty list each, as moto makes them.
        return deque([node(t.nonterminal, t.kind, t.text, t.value, []) for t in tokens])

    with mock.patch.object(ConditionExpressionParser, "_lex_condition_expression", lex):
        yield


@contextmanager
def cached_action_names() -> Iterator[None]:
    """moto lists a response class's methods (``inspect.getmembers``) on every request to find the
    action's handler; a class's method names do not change while the run lasts."""
    from moto.core import responses

    with mock.patch.object(
        responses, "method_names_from_class", functools.lru_cache(maxsize=256)(responses.method_names_from_class)
    ):
        yield


@contextmanager
def direct_sqs_retention_check() -> Iterator[None]:
    """moto checks each message's retention period at ReceiveMessage by building all of the
    queue's attributes - three message counts, each a pass over every message - three times per
    message, which makes a receive quadratic in queue depth. Read the one attribute directly: the
    same number, compared with the same (simulated, :func:`local_cloud.environment.sqs_on_clock`)
    clock."""
    from moto.sqs import models as sqs_models

    def is_message_valid_based_on_retention_period(self: Any, queue_name: str, message: Any) -> bool:
        retention_period = self.get_queue(queue_name).message_retention_period
        return bool(retention_period + message.sent_timestamp / 1000 > sqs_models.unix_time())

    with mock.patch.object(
        sqs_models.SQSBackend,
        "is_message_valid_based_on_retention_period",
        is_message_valid_based_on_retention_period,
    ):
        yield


#: Errors ``States.ALL`` does not match on AWS: "The States.ALL error type ... can't catch the
#: States.DataLimitExceeded terminal error and Runtime error types"
#: (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html, States.ALL).
UNCATCHABLE_BY_STATES_ALL = ("States.Runtime", "States.DataLimitExceeded")


@contextmanager
def states_all_excludes_terminal_errors() -> Iterator[None]:
    """moto's ``States.ALL`` matches every error name, States.Runtime and States.DataLimitExceeded
    included, so a Retry or Catch on ``States.ALL`` handled what fails the execution on AWS. The
    wildcard no longer matches those two (a retrier or catcher naming them explicitly is unchanged)."""
    from moto.stepfunctions.parser.asl.component.common.error_name.error_equals_decl import ErrorEqualsDecl

    original = ErrorEqualsDecl._eval_body

    @functools.wraps(original)
    def eval_body(self: Any, env: Any) -> None:
        error_name = env.stack[-1]
        name = getattr(error_name, "error_name", None)
        if name in UNCATCHABLE_BY_STATES_ALL and ErrorEqualsDecl._STATE_ALL_ERROR in self.error_names:
            env.stack.pop()
            env.stack.append(any(getattr(n, "error_name", None) == name for n in self.error_names))
            return
        original(self, env)

    with mock.patch.object(ErrorEqualsDecl, "_eval_body", eval_body):
        yield


@contextmanager
def dynamodb_task_timeout() -> Iterator[None]:
    """moto's DynamoDB task reports every exception that is not a ClientError as
    ``DynamoDB.AmazonDynamoDBException``, its own timeout included; on AWS a task that runs past its
    ``TimeoutSeconds`` fails with ``States.Timeout``
    (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html, States.Timeout),
    which the saga's status writes handle differently (a retrier or catcher may name it)."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_dynamodb import (
        StateTaskServiceDynamoDB,
    )

    original = StateTaskServiceDynamoDB._from_error

    @functools.wraps(original)
    def from_error(self: Any, env: Any, ex: Exception) -> Any:
        if isinstance(ex, TimeoutError):
            return self._get_timed_out_failure_event(env)
        return original(self, env, ex)

    with mock.patch.object(StateTaskServiceDynamoDB, "_from_error", from_error):
        yield


@contextmanager
def cached_url_dispatch() -> Iterator[None]:
    """moto finds the handler of every request by matching its URL against every service's URL
    patterns (about 120 regular expressions for a DynamoDB call), then compiling and matching the
    backend's own URL patterns. Which handler a URL reaches depends only on the URL (the patterns
    are module constants; the handlers are the response classes' ``dispatch`` functions), so it is
    found once per URL; passthrough and allow-list settings are still checked on every request,
    and the request is normalised, recorded and handled as moto does."""
    import re

    import moto.backend_index as backend_index
    from moto.core import botocore_stubber
    from moto.core.config import passthrough_service, passthrough_url, service_whitelisted
    from moto.core.exceptions import HTTPException, ServiceNotWhitelisted
    from moto.core.request import normalize_request
    from moto.core.utils import get_equivalent_url_in_aws_domain

    original = botocore_stubber.BotocoreStubber.process_request
    handlers: dict[str, tuple[str, Callable[..., Any]]] = {}

    def handler_for(clean_url: str) -> tuple[str, Callable[..., Any]] | None:
        found = handlers.get(clean_url)
        if found is not None:
            return found
        import moto.backends as backends
        from moto.core import DEFAULT_ACCOUNT_ID
        from moto.core.base_backend import BackendDict

        for service, pattern in backend_index.backend_url_patterns:
            if not pattern.match(clean_url):
                continue
            backend_dict = backends.get_backend(service)  # type: ignore[call-overload]
            if isinstance(backend_dict, BackendDict):
                regions = backend_dict[DEFAULT_ACCOUNT_ID]
                backend = regions["us-east-1"] if "us-east-1" in regions else regions["aws"]
            else:
                backend = backend_dict["global"]
            for url, method in backend.urls.items():
                if re.compile(url).match(clean_url):
                    # Only a handler that is not bound to a backend instance is the same for every request.
                    if isinstance(getattr(method, "__self__", type), type) and len(handlers) < PARSE_CACHE_LIMIT:
                        handlers[clean_url] = (service, method)
                    return service, method
        return None  # moto goes on to the next service when no URL of the backend matches, and so does this

    @functools.wraps(original)
    def process_request(self: Any, request: Any) -> Any:
        parsed_url, _ = get_equivalent_url_in_aws_domain(request.url)
        clean_url = f"{parsed_url.scheme}://{parsed_url.netloc}{parsed_url.path}"
        found = None if passthrough_url(clean_url) else handler_for(clean_url)
        if found is None:
            return original(self, request)  # passthrough, 404 or not implemented: moto answers as before
        service, method = found
        if passthrough_service(service):
            return None
        if not service_whitelisted(service):
            raise ServiceNotWhitelisted(service)
        from moto.moto_api import recorder

        normalized = normalize_request(request)
        try:
            recorder._record_request(normalized)
            status, headers, body = method(normalized, normalized.raw_url, normalized.headers)
        except HTTPException as e:
            status, headers, body = e.code, e.get_headers(), e.get_body()
        return status, headers, body

    with mock.patch.object(botocore_stubber.BotocoreStubber, "process_request", process_request):
        yield
