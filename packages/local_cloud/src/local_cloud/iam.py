"""Evaluate the synthesized template's own IAM identity policies, as IAM does, for the local run.

Why hand-written: moto enforces IAM only when asked to, and even then it authorizes every
non-S3 request against the resource ``*`` (``moto/core/authorization.py``:
``_authenticate_and_authorize_normal_action(resource="*")``; ``moto/iam/access_control.py``
compares the Resource element with that ``*``). A grant scoped to one table, queue or function
therefore cannot be proven, or refuted, by moto. No maintained library evaluates identity
policies offline with resource ARNs (policy simulators are AWS API calls). What this needs is
small: explicit Deny wins, then Allow, else an implicit deny
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html);
``Action``/``NotAction`` (case-insensitive) and ``Resource``/``NotResource`` (case-sensitive) with ``*``
and ``?`` wildcards.

Conditions are decided by :mod:`iam_conditions` against the request context the caller gives: every
operator of AWS's reference, ``IfExists``, ``ForAnyValue``/``ForAllValues``, missing keys as AWS documents
them. What it cannot decide (an operator outside the reference, a value that does not parse) fails
closed: a Deny applies, an Allow does not; unknown operators are listed in :attr:`Policy.unsupported`
so the report can say so. (The current template has no condition in any identity policy; its
conditions are in trust policies, which are not evaluated.)
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from iam_conditions import applies, unsupported_operators


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
        return unsupported_operators(self.condition)

    def matches_condition(self, context: Mapping[str, str]) -> bool:
        """Whether the condition applies to this statement, failing closed on what cannot be decided."""
        return applies(self.effect, self.condition, context)

    def applies(self, action: str, resource: str, context: Mapping[str, str]) -> bool:
        return (
            self.matches_action(action)
            and self.matches_resource(resource)
            and (not self.condition or self.matches_condition(context))
        )


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
