"""Evaluate the synthesized template's own IAM identity policies, as IAM does, for the local run.

Why hand-written: moto enforces IAM only when asked to, and even then it authorizes every
non-S3 request against the resource ``*`` (``moto/core/authorization.py``:
``_authenticate_and_authorize_normal_action(resource="*")``; ``moto/iam/access_control.py``
compares the Resource element with that ``*``). A grant scoped to one table, queue or function
therefore cannot be proven, or refuted, by moto. No maintained library evaluates identity
policies offline with resource ARNs (policy simulators are AWS API calls). What this needs is
small: explicit Deny wins, then Allow, else an implicit deny; ``Action``/``NotAction``
(case-insensitive) and ``Resource``/``NotResource`` (case-sensitive) with ``*`` and ``?``
wildcards; a few condition operators.

Conditions: the operators in :data:`CONDITION_OPERATORS` are evaluated against the request
context the caller gives (``IfExists`` suffixes and ``ForAnyValue``/``ForAllValues`` prefixes are
not). Any other operator makes its statement NOT match, for Allow and Deny alike, and is
recorded in :attr:`Policy.unsupported` so the report can say so. (The current template has no
condition in any identity policy; its conditions are in trust policies, which are not evaluated.)
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any


class Decision(enum.Enum):
    ALLOW = "allow"
    EXPLICIT_DENY = "explicit_deny"
    IMPLICIT_DENY = "implicit_deny"


@lru_cache(maxsize=4096)
def _pattern(text: str, ignore_case: bool) -> re.Pattern[str]:
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in text)
    return re.compile(body, re.IGNORECASE | re.DOTALL if ignore_case else re.DOTALL)


def wildcard_match(pattern: str, value: str, *, ignore_case: bool = False) -> bool:
    """IAM's ``*`` (any run of characters) and ``?`` (one character) match over the whole value."""
    return _pattern(pattern, ignore_case).fullmatch(value) is not None


def _strings(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    return tuple(str(v) for v in value) if isinstance(value, list) else (str(value),)


def _string_equals(want: str, got: str) -> bool:
    return want == got


def _string_like(want: str, got: str) -> bool:
    return wildcard_match(want, got)


#: Supported condition operators: (test of one policy value against one request value, negated).
CONDITION_OPERATORS: dict[str, tuple[Any, bool]] = {
    "StringEquals": (_string_equals, False),
    "StringNotEquals": (_string_equals, True),
    "StringLike": (_string_like, False),
    "StringNotLike": (_string_like, True),
    "ArnEquals": (_string_like, False),
    "ArnLike": (_string_like, False),
    "ArnNotEquals": (_string_like, True),
    "ArnNotLike": (_string_like, True),
    "Bool": (lambda want, got: want.lower() == got.lower(), False),
}


@dataclass(frozen=True)
class Statement:
    """One statement, with its Resource elements already resolved to ARN patterns."""

    effect: str
    actions: tuple[str, ...] = ()
    not_actions: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    not_resources: tuple[str, ...] = ()
    condition: Mapping[str, Mapping[str, Any]] | None = None
    sid: str = ""

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> Statement:
        return cls(
            effect=str(raw.get("Effect", "Deny")),
            actions=_strings(raw.get("Action")),
            not_actions=_strings(raw.get("NotAction")),
            resources=_strings(raw.get("Resource")),
            not_resources=_strings(raw.get("NotResource")),
            condition=raw.get("Condition"),
            sid=str(raw.get("Sid", "")),
        )

    def matches_action(self, action: str) -> bool:
        if self.not_actions:
            return not any(wildcard_match(p, action, ignore_case=True) for p in self.not_actions)
        return any(wildcard_match(p, action, ignore_case=True) for p in self.actions)

    def matches_resource(self, resource: str) -> bool:
        if self.not_resources:
            return not any(wildcard_match(p, resource) for p in self.not_resources)
        return any(wildcard_match(p, resource) for p in self.resources)

    def unsupported_operators(self) -> list[str]:
        return [op for op in (self.condition or {}) if op not in CONDITION_OPERATORS]

    def matches_condition(self, context: Mapping[str, str]) -> bool:
        """All operators, all keys must hold; a key holds if any policy value matches (IAM's OR)."""
        for operator, keys in (self.condition or {}).items():
            if operator not in CONDITION_OPERATORS:
                return False
            test, negated = CONDITION_OPERATORS[operator]
            for key, wanted in keys.items():
                got = context.get(key) if key in context else _lower_get(context, key)
                if got is None:
                    return False  # a missing key never satisfies a condition (no IfExists support)
                hit = any(test(w, got) for w in _strings(wanted))
                if hit == negated:
                    return False
        return True

    def applies(self, action: str, resource: str, context: Mapping[str, str]) -> bool:
        return (
            self.matches_action(action)
            and self.matches_resource(resource)
            and (not self.condition or self.matches_condition(context))
        )


def _lower_get(context: Mapping[str, str], key: str) -> str | None:
    """Condition keys are case-insensitive."""
    lowered = key.lower()
    return next((v for k, v in context.items() if k.lower() == lowered), None)


@dataclass
class Policy:
    """Every identity-policy statement attached to one role."""

    statements: list[Statement] = field(default_factory=list)

    @property
    def unsupported(self) -> list[str]:
        return sorted({op for s in self.statements for op in s.unsupported_operators()})

    def evaluate(self, action: str, resource: str, context: Mapping[str, str] | None = None) -> Decision:
        """IAM's identity-policy logic: an applicable Deny wins, then an applicable Allow, else deny."""
        ctx = context or {}
        allowed = False
        for statement in self.statements:
            if statement.applies(action, resource, ctx):
                if statement.effect == "Deny":
                    return Decision.EXPLICIT_DENY
                allowed = allowed or statement.effect == "Allow"
        return Decision.ALLOW if allowed else Decision.IMPLICIT_DENY

    def grants(self) -> Iterable[tuple[str, str]]:
        """(action pattern, resource pattern) of each Allow with Action and Resource (for "unused grants")."""
        for s in self.statements:
            if s.effect != "Allow":
                continue
            resources = [f"NotResource {r}" for r in s.not_resources] if s.not_resources else list(s.resources)
            for action in s.actions or [f"NotAction {a}" for a in s.not_actions]:
                for resource in resources:
                    yield action, resource


def policy_from_documents(documents: Iterable[Mapping[str, Any]]) -> Policy:
    """A :class:`Policy` from resolved policy documents (``{"Statement": [...]}``)."""
    statements: list[Statement] = []
    for document in documents:
        raw = document.get("Statement", [])
        statements.extend(Statement.parse(s) for s in (raw if isinstance(raw, list) else [raw]))
    return Policy(statements)
