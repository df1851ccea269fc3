"""Hostile input for the local run (``--hostile-rate``), and where each piece of it ended.

SQS kinds (sent to the orders queue; intake must dead-letter each as ``permanent`` on its
first receive):

- ``deep_nesting``: a body nested ~3,000 levels deep (``json.loads`` would hit the recursion limit);
- ``oversize``: a valid-looking order (a huge address line) whose body and correlation ID attribute
  add up to exactly the orders queue's MaximumMessageSize (stacks.order_constructs.message_sizes
  ORDERS_QUEUE_MAX_MESSAGE_BYTES: the 64 KiB contract plus an attribute allowance): SQS accepts it,
  it is over intake's 64 KiB, so intake must dead-letter it as permanent;
- ``floats``: ``quantity`` 2.0 or ``unit_price_cents`` 1e3 where the contract wants JSON integers;
- ``wrong_types``: ``order_id`` a number, ``items`` a string, a body of ``[]`` or ``null``.

``oversize_refused`` is the same order one byte over the queue's limit: SQS refuses it at
SendMessage (``InvalidParameterValue``; SQS counts attributes in the size:
https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_MessageAttributeValue.html),
so the producer learns it synchronously and it must end ``refused_at_send``, never in a queue.

``unknown_order`` starts the saga directly with references to an order the orders table does
not know: the execution must end FAILED with no reservation, charge or shipment.

Every hostile message carries the correlation ID ``cid-hostile-<kind>-<hex>``, so its DLQ copy
is found by that attribute.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from harness.workload.orders import make_order
from stacks.order_constructs.message_sizes import ORDERS_QUEUE_MAX_MESSAGE_BYTES

OVERSIZE_REFUSED = "oversize_refused"
SQS_KINDS = ("deep_nesting", "oversize", OVERSIZE_REFUSED, "floats", "wrong_types")
UNKNOWN_ORDER = "unknown_order"
KINDS = (*SQS_KINDS, UNKNOWN_ORDER)
CID_PREFIX = "cid-hostile-"
#: Deep enough that the runtime's own ``json.loads`` raises RecursionError (python3.13's C decoder
#: parses 8,000 levels; 3,000 was enough on 3.11), shallow enough to stay under the 64 KiB contract
#: (so intake refuses it for its depth, not its size: ``{"a":`` is 5 bytes a level).
NESTING_DEPTH = 10_000
#: The one place a hostile message may end: the orders DLQ, permanent, dead-lettered on its first receive.
EXPECTED_SQS_END = "dlq_permanent_first_receive"
#: The same, when earlier receives ended in an invocation crash (another record's injected crash
#: fails the whole batch before this record was looked at, on AWS as here): dead-lettered as
#: permanent on the first receive that ran to the end, never retried because of its content.
EXPECTED_AFTER_CRASH = "dlq_permanent_first_receive_after_crashed_batches"
#: Where ``oversize_refused`` must end: refused by SQS at SendMessage (the producer saw the error).
REFUSED_AT_SEND = "refused_at_send"
#: The ends a hostile SQS message may have (each message is held to its kind's: see :func:`expected_ends`).
EXPECTED_SQS_ENDS = (EXPECTED_SQS_END, EXPECTED_AFTER_CRASH, REFUSED_AT_SEND)
#: The name, type and value of the correlation ID attribute count in the message size (as SQS counts them).
CORRELATION_ATTRIBUTE_OVERHEAD = len("correlation_id") + len("String")
#: No captured log line may be longer than this (CloudWatch Logs' event limit is 256 KiB; we want far less).
MAX_LOG_LINE_BYTES = 16_384


@dataclass(frozen=True)
class HostileMessage:
    kind: str
    body: str
    correlation_id: str
    order_id: str | None = None  # the order ID it claims, if it names one


@dataclass(frozen=True)
class HostileExecution:
    """A saga started directly for an order the pipeline never accepted."""

    order_id: str
    correlation_id: str
    payment_attempt: int = 1

    @property
    def kind(self) -> str:
        return UNKNOWN_ORDER

    def saga_input(self) -> dict[str, Any]:
        """References only, as the runtime starts the saga."""
        return {
            "order_id": self.order_id,
            "payment_attempt": self.payment_attempt,
            "correlation_id": self.correlation_id,
        }


def _hex(rng: random.Random) -> str:
    return f"{rng.getrandbits(40):010x}"


def _order_json(order: dict[str, Any], replacements: dict[str, str]) -> str:
    """``order`` as JSON, with each quoted placeholder replaced by raw JSON text (``2.0``, ``1e3``)."""
    text = json.dumps(order)
    for placeholder, raw in replacements.items():
        text = text.replace(json.dumps(placeholder), raw)
    return text


def _deep_nesting(order_id: str, rng: random.Random) -> str:
    if rng.random() < 0.5:
        nested = "[" * NESTING_DEPTH + "]" * NESTING_DEPTH
        return json.dumps({"order_id": order_id, "items": "@"}).replace('"@"', nested)
    return '{"a":' * NESTING_DEPTH + "1" + "}" * NESTING_DEPTH


def orders_queue_limit() -> int:
    """The orders queue's MaximumMessageSize, as the stack sets it (a plain number: the CDK is not loaded)."""
    return ORDERS_QUEUE_MAX_MESSAGE_BYTES


def sized_order_body(order_id: str, rng: random.Random, body_bytes: int) -> str:
    """A valid-looking order of exactly ``body_bytes`` bytes (ASCII), padded in its address line."""
    order = make_order(order_id, rng)
    line = order["shipping_address"]["line1"] + " "
    order["shipping_address"]["line1"] = ""
    room = body_bytes - len(json.dumps(order))
    if room < 0:
        raise ValueError(f"an order body cannot be as small as {body_bytes} bytes")
    order["shipping_address"]["line1"] = (line * (room // len(line) + 1))[:room]
    body = json.dumps(order)
    assert len(body.encode()) == body_bytes
    return body


def oversize_body(order_id: str, rng: random.Random, correlation_id: str, over: int = 0) -> str:
    """An order whose body plus its correlation ID attribute is the queue's limit plus ``over`` bytes."""
    attributes = CORRELATION_ATTRIBUTE_OVERHEAD + len(correlation_id.encode())
    return sized_order_body(order_id, rng, orders_queue_limit() - attributes + over)


def _floats(order_id: str, rng: random.Random) -> str:
    order = make_order(order_id, rng)
    field, raw = rng.choice((("quantity", "2.0"), ("unit_price_cents", "1e3")))
    order["items"][0][field] = "@number@"
    return _order_json(order, {"@number@": raw})


def _wrong_types(order_id: str, rng: random.Random) -> str:
    variant = rng.choice(("order_id_number", "items_string", "array", "null"))
    if variant == "array":
        return "[]"
    if variant == "null":
        return "null"
    order = make_order(order_id, rng)
    if variant == "order_id_number":
        order["order_id"] = rng.randint(1, 10**9)
    else:
        order["items"] = "SKU-APPLE x2"
    return json.dumps(order)


_BODIES = {"deep_nesting": _deep_nesting, "floats": _floats, "wrong_types": _wrong_types}


def make_hostile(kind: str, rng: random.Random) -> HostileMessage | HostileExecution:
    """One hostile input of ``kind`` (see the module docstring)."""
    marker = _hex(rng)
    cid = f"{CID_PREFIX}{kind}-{marker}"
    order_id = f"hostile-{kind.replace('_', '-')}-{marker}"
    if kind == UNKNOWN_ORDER:
        return HostileExecution(order_id=order_id, correlation_id=cid)
    if kind in ("oversize", OVERSIZE_REFUSED):
        return HostileMessage(
            kind, oversize_body(order_id, rng, cid, over=int(kind == OVERSIZE_REFUSED)), cid, order_id
        )
    return HostileMessage(kind, _BODIES[kind](order_id, rng), cid, order_id)


def expected_ends(kind: str, refused_at_edge: bool = False) -> tuple[str, ...]:
    """Where a hostile SQS message of ``kind`` may end. ``refused_at_edge``: sent through the order
    API (``--via api``), whose request validator or SQS integration may refuse any of them at once."""
    if refused_at_edge:
        return (REFUSED_AT_SEND,) if kind == OVERSIZE_REFUSED else EXPECTED_SQS_ENDS
    return (REFUSED_AT_SEND,) if kind == OVERSIZE_REFUSED else (EXPECTED_SQS_END, EXPECTED_AFTER_CRASH)


def execution_name(order_id: str, attempt: int) -> str:
    """The saga's execution name for an order's payment attempt (the runtime's own helper)."""
    from order_domain.saga_start import execution_name as runtime_execution_name

    return str(runtime_execution_name(order_id, attempt))


# --- where it ended ---------------------------------------------------------------------------


def _receive_count(message: Any) -> int:
    try:
        return int(message.attributes.get("dlq_receive_count", "0"))
    except ValueError:
        return 0


def _sqs_end(copies: list[Any], accepted: bool, crashed_receives: int = 0, refused: bool = False) -> str:
    """Where one hostile message ended, from its DLQ copies (``(queue, DlqMessage)``).

    ``crashed_receives``: receives of it that ended in an invocation crash (the whole batch failed);
    ``refused``: SQS refused it at SendMessage.
    """
    if refused:
        return REFUSED_AT_SEND
    permanent = [m for queue, m in copies if queue == "orders" and m.category == "permanent"]
    if any(_receive_count(m) == 1 for m in permanent):
        return EXPECTED_SQS_END
    if any(1 < _receive_count(m) <= 1 + crashed_receives for m in permanent):
        return EXPECTED_AFTER_CRASH
    if copies:
        queue, m = copies[0]
        return f"dlq_{queue}_{m.category}_receive_{m.attributes.get('dlq_receive_count', 'unknown')}"
    return "accepted_as_order" if accepted else "not_in_dlq"


def outcomes(
    injected: Iterable[HostileMessage | HostileExecution],
    dlq_messages: list[tuple[str, Any]],
    accepted_order_ids: set[str],
    execution_status: dict[str, str],
    side_effects: dict[str, int],
    crashed_receives: dict[str, int] | None = None,
    refused_at_send: Iterable[str] = (),
    refused_at_edge: bool = False,
) -> tuple[dict[str, dict[str, int]], list[dict[str, str]]]:
    """(``{kind: {"injected": n, <where it ended>: n}}``, the ones that ended anywhere else).

    ``execution_status``: unknown-order ID -> its execution's status; ``side_effects``: order
    ID -> ledger records and reservations found for it; ``crashed_receives``: correlation ID ->
    receives of it that ended in an invocation crash; ``refused_at_send``: correlation IDs of the
    messages SQS refused at SendMessage. A message that ended where another kind may (e.g. an
    ``oversize`` refused at send) is reported as ``unexpected_<end>``.
    """
    crashed = crashed_receives or {}
    refused = set(refused_at_send)
    by_cid: dict[str, list[tuple[str, Any]]] = {}
    for queue, message in dlq_messages:
        if str(message.correlation_id).startswith(CID_PREFIX):
            by_cid.setdefault(str(message.correlation_id), []).append((queue, message))
    report: dict[str, Counter[str]] = {kind: Counter() for kind in KINDS}
    misplaced: list[dict[str, str]] = []
    for item in injected:
        if isinstance(item, HostileMessage):
            kind = item.kind
            end = _sqs_end(
                by_cid.get(item.correlation_id, []),
                item.order_id in accepted_order_ids,
                crashed.get(item.correlation_id, 0),
                item.correlation_id in refused,
            )
            if end in EXPECTED_SQS_ENDS and end not in expected_ends(kind, refused_at_edge):
                end = f"unexpected_{end}"
            report[kind]["injected"] += 1
            report[kind][end] += 1
            if end not in EXPECTED_SQS_ENDS:
                misplaced.append({"kind": kind, "correlation_id": item.correlation_id, "ended": end})
            continue
        status = execution_status.get(item.order_id, "NOT_STARTED")
        effects = side_effects.get(item.order_id, 0)
        report[UNKNOWN_ORDER]["injected"] += 1
        report[UNKNOWN_ORDER][f"execution_{status.lower()}"] += 1
        report[UNKNOWN_ORDER]["side_effects"] += effects
        if status != "FAILED" or effects:
            misplaced.append(
                {"kind": UNKNOWN_ORDER, "order_id": item.order_id, "ended": f"{status}, {effects} side effects"}
            )
    full = {kind: {"injected": 0, **counts} for kind, counts in report.items()}
    full[UNKNOWN_ORDER].setdefault("execution_failed", 0)
    full[UNKNOWN_ORDER].setdefault("side_effects", 0)
    for kind in SQS_KINDS:
        full[kind].setdefault(expected_ends(kind)[0], 0)
    return full, misplaced


def side_effects_by_order(
    order_ids: set[str], ledger: list[dict[str, Any]], inventory: list[dict[str, Any]]
) -> dict[str, int]:
    """Ledger records (operations and requests) and reservations per order ID, for ``order_ids``."""
    found: Counter[str] = Counter()
    for item in ledger:
        if str(item.get("order_id")) in order_ids:
            found[str(item["order_id"])] += 1
    for item in inventory:
        if str(item.get("pk", "")).startswith("reservation#") and str(item.get("order_id")) in order_ids:
            found[str(item["order_id"])] += 1
    return dict(found)


# --- PII and line sizes -----------------------------------------------------------------------


@dataclass
class PiiFindings:
    """Where a generated order's token, customer name or address line turned up."""

    log_lines: int = 0
    execution_history_events: int = 0
    dlq_message_attributes: int = 0
    examples: list[str] | None = None

    def scan(self, where: str, text: str, pattern: re.Pattern[str]) -> None:
        match = pattern.search(text)
        if match is None:
            return
        setattr(self, where, getattr(self, where) + 1)
        examples = self.examples if self.examples is not None else []
        if len(examples) < 5:
            start = max(0, match.start() - 80)
            examples.append(f"{where}: ...{text[start : match.end() + 40]}...")
        self.examples = examples

    def as_dict(self) -> dict[str, Any]:
        return {
            "log_lines": self.log_lines,
            "execution_history_events": self.execution_history_events,
            "dlq_message_attributes": self.dlq_message_attributes,
            "examples": self.examples or [],
        }


def line_sizes(lines: list[str]) -> dict[str, int]:
    """The longest captured line (UTF-8 bytes) and how many exceed :data:`MAX_LOG_LINE_BYTES`."""
    sizes = [len(line.encode("utf-8", "surrogatepass")) for line in lines]
    return {
        "longest_line_bytes": max(sizes, default=0),
        "lines_over_16_kib": sum(1 for n in sizes if n > MAX_LOG_LINE_BYTES),
    }
