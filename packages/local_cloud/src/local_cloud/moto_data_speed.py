"""Speed patches of moto's DynamoDB and SQS backends (each registered and measured in
:mod:`local_cloud.patches_speed`; switched off by name with ``OPS_LOCAL_DISABLE_PATCHES``).

Why hand-written: moto does work per call that grows with a table's or a queue's size (a deep
copy of whole tables per transaction, a pass over every message per receive) or re-parses the
same expression text; these patches give the same answers for less."""

from __future__ import annotations

import functools
import threading
import types
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock


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


def _index_candidates(table: Any, index_name: str, call: Any) -> list[Any] | None:
    """The items of ``table`` a Query on ``index_name`` can return: the partition key equal and the
    sort-key condition true (moto's own comparisons); None where narrowing could change the answer
    (a ``Limit``, legacy ``KeyConditions`` filters, a multi-attribute key)."""
    args = call.arguments
    if args.get("limit") or args.get("filter_kwargs") or len(args.get("range_key_conditions") or []) > 1:
        return None
    hash_conditions = args.get("hash_key_conditions") or []
    index = next((i for i in table.all_indexes() if i.name == index_name), None)
    if index is None or not hash_conditions:
        return None  # moto raises its own error for an unknown index
    ranges = [k["AttributeName"] for k in index.schema if k["KeyType"] == "RANGE"]
    if len(ranges) > 1 or len(hash_conditions) != sum(k["KeyType"] == "HASH" for k in index.schema):
        return None
    comparison, objs = args.get("range_comparison"), args.get("range_objs")
    out = []
    for item in table.all_items():
        if any(not item.attrs.get(name) or item.attrs.get(name) != value for name, value in hash_conditions):
            continue
        if ranges and not item.attrs.get(ranges[0]):
            continue  # not in the index (a GSI holds only items with all its key attributes)
        if comparison and (not ranges or not item.attrs[ranges[0]].compare(comparison, objs)):
            continue
        out.append(item)
    return [_index_entry(index, item) for item in out]


def _index_entry(index: Any, item: Any) -> Any:
    """The item as the index holds it (its key and projected top-level attributes), shallow: moto
    deep-copies and projects it again, which gives the same attributes. Its size is the index
    entry's, which is what a Query on an index reads and pages by on AWS ("the calculation is based
    on the sizes of the index entries, rather than the size of the item in the base table":
    https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.ThroughputConsiderations.Reads)."""
    from moto.dynamodb.models.dynamo_type import Item

    projection = (index.projection or {}).get("ProjectionType")
    if projection not in ("KEYS_ONLY", "INCLUDE"):
        return item
    keep = {*index.table_key_attrs, *(k["AttributeName"] for k in index.schema)}
    if projection == "INCLUDE":
        keep.update(index.projection.get("NonKeyAttributes", []))
    return Item(item.hash_key, item.range_key, {k: v for k, v in item.attrs.items() if k in keep})


@contextmanager
def index_query_by_key() -> Iterator[None]:
    """moto answers a Query on a secondary index by walking every item of the table, computing the
    full size (a recursive walk) of each item with the partition key before it compares the sort
    key: the sweeper's two by-status queries per sweep cost 113 ms on a 1,000-order table to return
    40 rows, and each row is deep-copied whole and converted to JSON once per projected attribute
    before its projection drops the rest. The items are narrowed first to those whose partition key
    and sort-key condition match, with moto's own comparisons, and cut to the index's projection
    (:func:`_index_entry`); moto's query then runs on them as before: the same items, order,
    projection, filter and counts (only a query with a ``Limit`` or a multi-attribute key runs on the
    whole table, where narrowing could move where a page ends)."""
    import inspect

    from moto.dynamodb.models.table import Table

    original_query, original_all_items = Table.query, Table.all_items
    signature = inspect.signature(original_query)
    narrowed = threading.local()  # the items this thread's current query sees, per table

    def all_items(self: Any) -> list[Any]:
        items = getattr(narrowed, "by_table", {}).get(id(self))
        return list(items) if items is not None else original_all_items(self)

    @functools.wraps(original_query)
    def query(self: Any, *args: Any, **kwargs: Any) -> Any:
        call = signature.bind(self, *args, **kwargs)
        index_name = call.arguments.get("index_name")
        candidates = _index_candidates(self, index_name, call) if index_name else None
        if candidates is None:
            return original_query(self, *args, **kwargs)
        by_table = narrowed.__dict__.setdefault("by_table", {})
        by_table[id(self)] = candidates
        try:
            return original_query(self, *args, **kwargs)
        finally:
            del by_table[id(self)]

    with mock.patch.object(Table, "all_items", all_items), mock.patch.object(Table, "query", query):
        yield


def _projectable(value: Any) -> bool:
    """Whether moto's projection would hand ``value`` (a DynamoType) back unchanged: no binary and no
    set (sets come back in set order), every number already in the form ``Decimal`` prints."""
    from decimal import Decimal, InvalidOperation

    kind, held = value.type, value.value
    if kind in ("S", "BOOL", "NULL"):
        return True
    if kind == "N":
        try:
            return str(Decimal(held)) == held
        except (InvalidOperation, TypeError):
            return False
    if kind == "L":
        return all(_projectable(v) for v in held)
    if kind == "M":
        return all(_projectable(v) for v in held.values())
    return False


@contextmanager
def projection_without_round_trip() -> Iterator[None]:
    """moto projects an item (a ProjectionExpression; every item an index holds or returns) by
    turning the *whole* item into Python values, picking the paths, and turning those back into
    DynamoDB JSON. When every path is a top-level name and each picked value comes back unchanged
    (see :func:`_projectable`), the picked attributes are copied as they are held; anything else
    (a nested path, a list index, a set, binary, an unusual number) goes to moto."""
    from moto.dynamodb.models.dynamo_type import Item

    original = Item.project

    @functools.wraps(original)
    def project(self: Any, projection_expressions: list[list[str]]) -> Any:
        names = list(dict.fromkeys(e[0] for e in projection_expressions if len(e) == 1 and "[" not in e[0]))
        if len(names) != len(projection_expressions):
            return original(self, projection_expressions)
        picked = [(n, self.attrs[n]) for n in names if n in self.attrs]
        if not all(_projectable(v) for _, v in picked):
            return original(self, projection_expressions)
        return Item(hash_key=self.hash_key, range_key=self.range_key, attrs={n: v.to_regular_json() for n, v in picked})

    with mock.patch.object(Item, "project", project):
        yield
