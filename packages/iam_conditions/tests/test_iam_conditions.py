"""Each answer below is AWS's, as documented:

- operators and missing keys: https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html
- set operators: https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-single-vs-multi-valued-context-keys.html
- several keys / values: https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-logic-multiple-context-keys-or-values.html
"""

from __future__ import annotations

from typing import Any

import pytest

from iam_conditions import OPERATORS, Unknown, UnsupportedOperator, applies, evaluate, parse_operator, token
from iam_conditions import unsupported_operators as refused

#: Every operator of AWS's condition operator reference (the page above), Null included.
AWS_OPERATORS = {
    *("StringEquals", "StringNotEquals", "StringEqualsIgnoreCase", "StringNotEqualsIgnoreCase"),
    *("StringLike", "StringNotLike", "Bool", "BinaryEquals", "IpAddress", "NotIpAddress", "Null"),
    *("NumericEquals", "NumericNotEquals", "NumericLessThan", "NumericLessThanEquals"),
    *("NumericGreaterThan", "NumericGreaterThanEquals"),
    *("DateEquals", "DateNotEquals", "DateLessThan", "DateLessThanEquals", "DateGreaterThan", "DateGreaterThanEquals"),
    *("ArnEquals", "ArnLike", "ArnNotEquals", "ArnNotLike"),
}


def holds(operator: str, key: str, value: Any, context: dict[str, Any]) -> bool | None:
    return evaluate({operator: {key: value}}, context).holds


def test_iam_conditions_every_aws_operator_is_implemented() -> None:
    assert set(OPERATORS) | {"Null"} == AWS_OPERATORS
    for name in AWS_OPERATORS - {"Null"}:
        assert parse_operator(f"ForAnyValue:{name}IfExists").base == name
    assert refused({"StringMatchesRegex": {}, "NullIfExists": {}, "ForSomeValues:StringEquals": {}, "Bool": {}}) == [
        "StringMatchesRegex",
        "NullIfExists",
        "ForSomeValues:StringEquals",
    ]
    with pytest.raises(UnsupportedOperator, match="StringMatchesRegex"):
        parse_operator("StringMatchesRegex")


@pytest.mark.parametrize(
    ("operator", "value", "got", "expected"),
    [
        ("StringEquals", "Prod", "Prod", True),
        ("StringEquals", "Prod", "prod", False),
        ("StringEqualsIgnoreCase", "Prod", "pROD", True),
        ("StringNotEqualsIgnoreCase", "Prod", "pROD", False),
        ("StringNotEquals", ["a", "b"], "b", False),  # negated with several values: none may match
        ("StringNotEquals", ["a", "b"], "c", True),
        ("StringLike", "order-*-?", "order-12-x", True),
        ("StringLike", "order-*-?", "Order-12-x", False),
        ("StringNotLike", "order-*", "invoice-1", True),
        ("NumericLessThan", "10", "9.5", True),
        ("NumericGreaterThanEquals", 10, "10", True),
        ("NumericNotEquals", "10", "10.0", False),
        ("NumericEquals", "10", "ten", None),  # not a number: undecided
        ("DateLessThan", "2026-12-31T23:59:59Z", "2026-11-27T10:00:00Z", True),
        ("DateGreaterThan", "2026-12-31T23:59:59Z", "1798761600", True),  # epoch seconds (2027-01-01)
        ("DateNotEquals", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00+00:00", False),
        ("Bool", True, "true", True),
        ("Bool", "false", "TRUE", False),
        ("BinaryEquals", "QmluYXJ5VmFsdWU=", "QmluYXJ5VmFsdWU=", True),
        ("IpAddress", "203.0.113.0/24", "203.0.113.7", True),
        ("IpAddress", "203.0.113.0/24", "198.51.100.7", False),
        ("NotIpAddress", "2001:db8::/32", "2001:db8::1", False),
        ("ArnLike", "arn:aws:sns:*:123456789012:alerts-*", "arn:aws:sns:eu-west-1:123456789012:alerts-dev", True),
        ("ArnEquals", "arn:aws:sns:*:*:alerts", "arn:aws:sns:eu-west-1:123456789012:alerts", True),
        # each ARN part on its own: * does not span the colons between region and account
        ("ArnLike", "arn:aws:sns:*:alerts", "arn:aws:sns:eu-west-1:123456789012:alerts", False),
        ("ArnNotLike", "arn:aws:sns:*:*:other", "arn:aws:sns:eu-west-1:123456789012:alerts", True),
    ],
)
def test_iam_conditions_operator_on_present_key(operator: str, value: Any, got: str, expected: bool | None) -> None:
    assert holds(operator, "k", value, {"k": got}) is expected


@pytest.mark.parametrize(
    ("operator", "expected"),
    [
        ("StringEquals", False),  # a missing key does not match
        ("StringNotEquals", True),  # ... but a negated operator is then true
        ("ArnNotLike", True),
        ("NotIpAddress", True),
        ("StringEqualsIfExists", True),  # ...IfExists: true when the key is missing
        ("StringNotEqualsIfExists", True),
        ("ForAnyValue:StringEquals", False),  # ForAnyValue on a missing key: false
        ("ForAnyValue:StringNotEquals", False),
        ("ForAllValues:StringEquals", True),  # ForAllValues on a missing key: true
    ],
)
def test_iam_conditions_missing_key(operator: str, expected: bool) -> None:
    assert holds(operator, "aws:PrincipalOrgID", "o-a1b2c3d4e5", {"aws:SourceAccount": "123456789012"}) is expected


def test_iam_conditions_null_tests_presence() -> None:
    assert holds("Null", "aws:PrincipalOrgID", "true", {}) is True
    assert holds("Null", "aws:PrincipalOrgID", "false", {}) is False
    assert holds("Null", "aws:PrincipalOrgID", "false", {"aws:principalorgid": "o-1"}) is True


def test_iam_conditions_set_operators_on_multivalued_keys() -> None:
    tags = {"aws:TagKeys": ["env", "team"]}
    assert holds("ForAllValues:StringEquals", "aws:TagKeys", ["env", "team", "cost"], tags) is True
    assert holds("ForAllValues:StringEquals", "aws:TagKeys", ["env"], tags) is False
    assert holds("ForAnyValue:StringEquals", "aws:TagKeys", ["team"], tags) is True
    assert holds("ForAnyValue:StringLike", "aws:TagKeys", ["x*"], tags) is False
    assert holds("ForAllValues:StringEquals", "aws:TagKeys", ["env"], {"aws:TagKeys": []}) is True  # empty set
    assert holds("ForAnyValue:StringEquals", "aws:TagKeys", ["env"], {"aws:TagKeys": []}) is False
    assert holds("StringEquals", "aws:TagKeys", "env", tags) is None  # multivalued without a set operator


def test_iam_conditions_all_operators_and_keys_must_hold() -> None:
    context = {"aws:SourceAccount": "123456789012", "aws:SecureTransport": "true"}
    both = {"StringEquals": {"aws:SourceAccount": "123456789012"}, "Bool": {"aws:SecureTransport": "false"}}
    assert evaluate(both, context).holds is False
    assert evaluate({"StringEquals": {"aws:SourceAccount": "123456789012"}}, context).holds is True
    # A definite False decides the block even beside an operator nobody knows.
    assert evaluate({**both, "StringMatchesRegex": {"k": ".*"}}, context).holds is False


def test_iam_conditions_undecided_fails_closed_with_reasons() -> None:
    condition = {"StringMatchesRegex": {"aws:SourceAccount": ".*"}}
    verdict = evaluate(condition, {"aws:SourceAccount": "123456789012"})
    assert verdict.holds is None and "StringMatchesRegex" in verdict.reasons[0]
    assert applies("Deny", condition, {}) is True
    assert applies("Allow", condition, {}) is False
    assert applies("Allow", {"StringEquals": {"aws:username": "${aws:username}"}}, {"aws:username": "x"}) is False


def test_iam_conditions_partly_known_value() -> None:
    """A generated alarm name: ``<stack>-`` known, the rest not; tokens stand for the account and region."""
    account, region = token(0), token(1)
    arn = Unknown(f"arn:aws:cloudwatch:{region}:{account}:alarm:Stack-", complete=False)
    ctx = {"aws:SourceArn": arn, "aws:SourceAccount": Unknown(account, complete=True)}
    assert holds("ArnLike", "aws:SourceArn", f"arn:aws:cloudwatch:{region}:{account}:alarm:Stack-*", ctx) is True
    assert holds("ArnLike", "aws:SourceArn", "arn:aws:cloudwatch:*:*:alarm:*", ctx) is True
    assert holds("ArnLike", "aws:SourceArn", "arn:aws:cloudwatch:*:*:alarm:Stack-Alarm*", ctx) is None
    assert holds("ArnLike", "aws:SourceArn", "arn:aws:cloudwatch:*:*:alarm:Other-*", ctx) is False
    assert holds("ArnLike", "aws:SourceArn", "arn:aws:cloudwatch:us-east-1:*:alarm:*", ctx) is None  # region?
    assert holds("StringEquals", "aws:SourceAccount", account, ctx) is True
    assert holds("StringEquals", "aws:SourceAccount", "123456789012", ctx) is None  # which account?
    assert holds("StringNotEquals", "aws:SourceAccount", "123456789012", ctx) is None
    assert holds("StringLike", "aws:SourceAccount", "*", ctx) is True
    assert holds("StringLike", "aws:SourceAccount", "?", ctx) is None  # a token's length is unknown
