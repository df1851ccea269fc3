"""The IAM checks handed to the independent simulator: recorded calls carried across stages, verdicts compared."""

from __future__ import annotations

from typing import Any

from harness.engines.iam_checks import (
    POLICY_VARIANTS,
    Verdict,
    compare_verdicts,
    other_roles,
    to_stage,
    tokenise,
    variant_document,
)
from local_cloud.alarm_actions import CLOUDWATCH, resource_policy_for

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


TOPIC = "arn:aws:sns:us-east-1:123456789012:OrderPipeline-dev-AlarmTopic"
CONTEXT = {
    "aws:SourceArn": "arn:aws:cloudwatch:us-east-1:123456789012:alarm:OrderPipeline-dev-Stuck",
    "aws:SourceAccount": "123456789012",
    "aws:SecureTransport": "true",
}
#: AWS's documented answer for CloudWatch's publish under each guardrail (a service principal's request has no
#: aws:PrincipalOrgID: a negated operator, or IfExists, on a missing key holds; ForAnyValue on one does not).
DOCUMENTED = {
    "deny-org-string-not-equals": Verdict.EXPLICIT_DENY,
    "deny-org-string-not-equals-if-exists": Verdict.EXPLICIT_DENY,
    "deny-org-for-any-value": Verdict.ALLOW,
    "allow-account-ignore-case": Verdict.ALLOW,
    "allow-stage-alarms-only": Verdict.ALLOW,
    "deny-other-stage-alarms": Verdict.ALLOW,
    "deny-without-source-arn": Verdict.ALLOW,
}


def test_policy_variants_emulator_gives_aws_documented_answers() -> None:
    base: dict[str, Any] = {"Statement": []}
    assert set(POLICY_VARIANTS) == set(DOCUMENTED)
    for name, statement in POLICY_VARIANTS.items():
        document = variant_document(base, statement, TOPIC, "OrderPipeline-dev")
        decision = resource_policy_for([document], CLOUDWATCH).evaluate("sns:Publish", TOPIC, CONTEXT)
        assert decision is DOCUMENTED[name], name
