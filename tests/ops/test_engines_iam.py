"""The IAM checks handed to the independent simulator: recorded calls carried across stages, verdicts compared."""

from __future__ import annotations

from harness.engines.iam_checks import Verdict, compare_verdicts, other_roles, to_stage, tokenise

DEV, PROD = "OrderPipeline-dev", "OrderPipeline-prod"


def test_tokenise_stack_names_carry_a_call_to_the_other_stage() -> None:
    arn = f"arn:aws:dynamodb:us-east-1:123456789012:table/{DEV}-OrdersTableD407578C"
    token = tokenise(arn, DEV)
    assert DEV not in token
    assert to_stage(token, PROD) == f"arn:aws:dynamodb:us-east-1:123456789012:table/{PROD}-OrdersTableD407578C"
    assert to_stage(tokenise("*", DEV), PROD) == "*"


def test_compare_verdicts_allow_deny_and_explicit_deny() -> None:
    assert compare_verdicts(Verdict.ALLOW, "Allowed")
    assert compare_verdicts(Verdict.IMPLICIT_DENY, "ImplicitlyDenied")
    assert compare_verdicts(Verdict.EXPLICIT_DENY, "ExplicitlyDenied")
    assert not compare_verdicts(Verdict.ALLOW, "ImplicitlyDenied")
    assert not compare_verdicts(Verdict.IMPLICIT_DENY, "ExplicitlyDenied")
    assert not compare_verdicts(Verdict.ALLOW, None)  # the simulator refused the request: never agreement


def test_other_roles_asks_each_call_of_every_role_that_did_not_make_it() -> None:
    calls = [
        {"role": "A", "action": "sqs:SendMessage", "resource": "q"},
        {"role": "B", "action": "sqs:SendMessage", "resource": "q"},
        {"role": "B", "action": "dynamodb:GetItem", "resource": "t"},
    ]
    asked = other_roles(calls, ["A", "B", "C"])
    assert sorted((c["role"], c["action"]) for c in asked) == [
        ("A", "dynamodb:GetItem"),
        ("C", "dynamodb:GetItem"),
        ("C", "sqs:SendMessage"),
    ]
