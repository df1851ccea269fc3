"""A statement's ``Condition`` element against a request context, as IAM evaluates it, failing closed.

Why hand-written: no maintained Python library evaluates IAM conditions offline (IAM's policy simulator is an
AWS API call; moto's trust-policy check knows ``StringEquals`` only and skips every other operator, which is the
fail-open behaviour this package exists to remove). The CDK app's synth check (``constructs_lib.delivery``) and
the local emulator (``local_cloud.iam``) both import it: it depends on nothing but the standard library.

The rules, each as AWS documents it:

- All operators of a block must hold, all keys of an operator must hold, and a key holds if any of the
  policy's values matches the request's; for a negated operator (``StringNotEquals``...) the key holds when
  none matches: https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-logic-multiple-context-keys-or-values.html
- A key missing from the request: the condition is false, but true for a negated operator; ``...IfExists``
  is true; ``Null`` tests presence itself:
  https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html
- ``ForAnyValue:`` holds if at least one request value matches (false on a missing key or an empty set);
  ``ForAllValues:`` holds if every request value matches (true on a missing key or an empty set). A
  multivalued key without a set operator is not decided here:
  https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-single-vs-multi-valued-context-keys.html

What cannot be decided (an operator outside AWS's reference, a value that does not parse as its type, a
policy variable, a request value known only in part) is ``None`` in :attr:`Verdict.holds`, with the reason;
:func:`applies` then fails closed: a Deny is taken to apply and an Allow not to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from iam_conditions.values import (
    DATE,
    NUMBER,
    Test,
    Tri,
    Unknown,
    Value,
    all3,
    any3,
    arn_like,
    binary_equals,
    boolean,
    glob,
    ip_address,
    ordered,
    string_equals,
)

#: Every operator of AWS's condition operator reference but ``Null``: (test, negated).
OPERATORS: dict[str, tuple[Test, bool]] = {
    "StringEquals": (string_equals, False),
    "StringNotEquals": (string_equals, True),
    "StringEqualsIgnoreCase": (lambda w, g: string_equals(w, g, fold=True), False),
    "StringNotEqualsIgnoreCase": (lambda w, g: string_equals(w, g, fold=True), True),
    "StringLike": (glob, False),
    "StringNotLike": (glob, True),
    "NumericEquals": (ordered(NUMBER, "=="), False),
    "NumericNotEquals": (ordered(NUMBER, "=="), True),
    "NumericLessThan": (ordered(NUMBER, "<"), False),
    "NumericLessThanEquals": (ordered(NUMBER, "<="), False),
    "NumericGreaterThan": (ordered(NUMBER, ">"), False),
    "NumericGreaterThanEquals": (ordered(NUMBER, ">="), False),
    "DateEquals": (ordered(DATE, "=="), False),
    "DateNotEquals": (ordered(DATE, "=="), True),
    "DateLessThan": (ordered(DATE, "<"), False),
    "DateLessThanEquals": (ordered(DATE, "<="), False),
    "DateGreaterThan": (ordered(DATE, ">"), False),
    "DateGreaterThanEquals": (ordered(DATE, ">="), False),
    "Bool": (boolean, False),
    "BinaryEquals": (binary_equals, False),
    "IpAddress": (ip_address, False),
    "NotIpAddress": (ip_address, True),
    "ArnEquals": (arn_like, False),
    "ArnLike": (arn_like, False),
    "ArnNotEquals": (arn_like, True),
    "ArnNotLike": (arn_like, True),
}
NULL = "Null"
SET_OPERATORS = ("ForAnyValue", "ForAllValues")
IF_EXISTS = "IfExists"

Context = Mapping[str, Value | Sequence[Value]]


class UnsupportedOperator(ValueError):
    """An operator name outside AWS's reference (or a combination it does not allow, like ``NullIfExists``)."""


@dataclass(frozen=True)
class Operator:
    name: str
    base: str
    set_operator: str | None = None
    if_exists: bool = False


def parse_operator(name: str) -> Operator:
    """``ForAnyValue:StringNotEqualsIfExists`` -> its set operator, base operator and IfExists flag."""
    set_operator, _, rest = name.rpartition(":")
    if set_operator and set_operator not in SET_OPERATORS:
        raise UnsupportedOperator(f"condition operator {name!r} is not one of AWS's (set operator {set_operator!r})")
    base = rest.removesuffix(IF_EXISTS)
    if_exists = base != rest
    if base == NULL and not (set_operator or if_exists):
        return Operator(name, base)
    if base not in OPERATORS:
        raise UnsupportedOperator(f"condition operator {name!r} is not one this evaluator knows")
    return Operator(name, base, set_operator or None, if_exists)


def unsupported_operators(condition: Mapping[str, Any] | None) -> list[str]:
    """The operator names of ``condition`` that :func:`parse_operator` refuses."""
    refused = []
    for name in condition or {}:
        try:
            parse_operator(name)
        except UnsupportedOperator:
            refused.append(name)
    return refused


def _policy_values(raw: Any) -> list[str]:
    items = raw if isinstance(raw, list) else [raw]
    return [("true" if v else "false") if isinstance(v, bool) else str(v) for v in items]


def _request_values(context: Context, key: str) -> list[Value] | None:
    """The request's values of ``key`` (keys are case-insensitive), or None when the key is missing."""
    lowered = key.lower()
    for name, raw in context.items():
        if name.lower() == lowered:
            if isinstance(raw, str | Unknown):
                return [raw]
            return list(raw)
    return None


def _null(wanted: list[str], got: list[Value] | None) -> Tri:
    """``Null``: ``true`` holds when the key is missing (or its value is empty), ``false`` when it is present."""
    absent = got is None or got == [] or got == [""]
    flags = [w.lower() for w in wanted]
    if any(f not in ("true", "false") for f in flags):
        return None
    return any((f == "true") == absent for f in flags)


def key_holds(operator: Operator, wanted: list[str], got: list[Value] | None) -> Tri:
    """One key of one operator: the policy's ``wanted`` values against the request's ``got`` (None: missing)."""
    if operator.base == NULL:
        return _null(wanted, got)
    test, negated = OPERATORS[operator.base]
    empty = got is None or (operator.set_operator is not None and got in ([], [""]))
    if empty:
        if operator.if_exists:
            return True
        if operator.set_operator == "ForAllValues":
            return True
        if operator.set_operator == "ForAnyValue":
            return False
        return negated

    def one(value: Value) -> Tri:
        hit = any3([test(w, value) for w in wanted])
        return hit if hit is None or not negated else not hit

    assert got is not None
    if operator.set_operator is None:
        return one(got[0]) if len(got) == 1 else None  # a multivalued key needs a set operator
    results = [one(v) for v in got]
    return any3(results) if operator.set_operator == "ForAnyValue" else all3(results)


@dataclass(frozen=True)
class Verdict:
    """Whether a condition holds: True, False, or None (cannot be decided, ``reasons`` say why)."""

    holds: Tri
    reasons: tuple[str, ...] = ()


def evaluate(condition: Mapping[str, Any] | None, context: Context) -> Verdict:
    """The whole ``Condition`` element: every operator and every key must hold (Kleene AND)."""
    results: list[Tri] = []
    reasons: list[str] = []
    for name, keys in (condition or {}).items():
        try:
            operator = parse_operator(name)
        except UnsupportedOperator as refused:
            results.append(None)
            reasons.append(str(refused))
            continue
        if not isinstance(keys, Mapping):
            results.append(None)
            reasons.append(f"condition operator {name!r} does not map keys to values")
            continue
        for key, raw in keys.items():
            result = key_holds(operator, _policy_values(raw), _request_values(context, key))
            if result is None:
                reasons.append(f"{name} on {key} cannot be decided from the request")
            results.append(result)
    holds = all3(results)
    return Verdict(holds, tuple(reasons) if holds is None else ())


def applies(effect: str, condition: Mapping[str, Any] | None, context: Context) -> bool:
    """Fail closed: an undecidable condition makes a Deny apply and an Allow not apply."""
    holds = evaluate(condition, context).holds
    return holds if holds is not None else effect == "Deny"
