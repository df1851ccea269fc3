"""One policy value against one request value, for each family of IAM's condition operators.

Each test answers ``True`` (matches), ``False`` (does not) or ``None`` (cannot be decided here: a value
that does not parse as the operator's type, a policy variable, or a request value only partly known).
The operators and their matching rules, as documented:
https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html

- String: ``StringEquals`` case-sensitive, ``...IgnoreCase`` not; ``StringLike`` with ``*`` (any run of
  characters) and ``?`` (one character), case-sensitive.
- Numeric: integers and decimals. Date: ISO 8601 or epoch seconds. Bool: ``true``/``false``.
- ``BinaryEquals``: the policy's value is base64; the request's value is compared as the same bytes.
- ``IpAddress``: an address or CIDR range (IPv4 or IPv6) holding the request's address.
- ARN: ``ArnEquals`` and ``ArnLike`` behave alike: each of the six colon-delimited parts is matched on its
  own (a ``*`` never spans a colon), case-sensitive.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation

Tri = bool | None


#: Characters of Unicode's Private Use Area stand for opaque tokens: a value the evaluator cannot know (an
#: account ID or region CloudFormation fills in at deploy time) that is the same wherever the same token appears,
#: in the request or in the policy. A match that holds whatever the tokens stand for is True; a mismatch that
#: involves a token is undecided (the token may stand for the very text compared).
TOKENS = range(0xE000, 0xF900)


def token(index: int) -> str:
    """The ``index``-th opaque token character."""
    if not 0 <= index < len(TOKENS):
        raise ValueError(f"token {index}: only {len(TOKENS)} opaque tokens exist")
    return chr(TOKENS.start + index)


def _has_token(text: str) -> bool:
    return any(ord(c) in TOKENS for c in text)


def _prefix(text: str) -> str:
    """The text before its first token: what is known for certain."""
    return next((text[:i] for i, c in enumerate(text) if ord(c) in TOKENS), text)


@dataclass(frozen=True)
class Unknown:
    """A request value not fully known: ``text`` (which may hold tokens) is the whole value when ``complete``,
    else only its start (e.g. a name CloudFormation completes with a random suffix)."""

    text: str = ""
    complete: bool = False


Value = str | Unknown
Test = Callable[[str, Value], Tri]


def any3(results: list[Tri]) -> Tri:
    """Kleene OR: True if any is True, else None if any is undecided, else False."""
    if True in results:
        return True
    return None if None in results else False


def all3(results: list[Tri]) -> Tri:
    """Kleene AND: False if any is False, else None if any is undecided, else True."""
    if False in results:
        return False
    return None if None in results else True


# -- wildcards: a small NFA over the pattern, so a value known only in part is decided when it can be ------------
def _closure(states: set[int], pattern: str) -> set[int]:
    """Add the positions after each run of ``*`` (a ``*`` may match nothing)."""
    stack, seen = list(states), set(states)
    while stack:
        p = stack.pop()
        if p < len(pattern) and pattern[p] == "*" and p + 1 not in seen:
            seen.add(p + 1)
            stack.append(p + 1)
    return seen


def _consume(pattern: str, text: str) -> set[int]:
    """The pattern positions reachable after ``text``. A token is consumed only by ``*`` or by the same token
    (``?`` is one character; a token stands for a text of unknown length)."""
    states = _closure({0}, pattern)
    for ch in text:
        step: set[int] = set()
        for p in states:
            c = pattern[p] if p < len(pattern) else ""
            if c == "*":
                step.add(p)
            elif c == ch or (c == "?" and ord(ch) not in TOKENS):
                step.add(p + 1)
        states = _closure(step, pattern)
        if not states:
            break
    return states


def _open_ended(pattern: str, states: set[int]) -> bool:
    """Some reachable position is followed by ``*`` only: every continuation matches."""
    return any(p < len(pattern) and set(pattern[p:]) == {"*"} for p in states)


def glob(pattern: str, value: Value, fold: bool = False) -> Tri:
    """IAM's ``*``/``?`` over the whole value; True only when it holds whatever the tokens and the unknown
    rest of a value stand for, False only when no token is involved (or the known prefix already differs)."""
    if "${" in pattern:
        return None  # a policy variable: its value is not in the context given here
    text = value if isinstance(value, str) else value.text
    if fold:
        pattern, text = pattern.casefold(), text.casefold()
    states = _consume(pattern, text)
    complete = isinstance(value, str) or value.complete
    if (len(pattern) in states) if complete else _open_ended(pattern, states):
        return True
    if not _has_token(pattern) and not _consume(pattern, _prefix(text)):
        return False  # the known start already rules every completion out
    return None if _has_token(pattern + text) or not complete else False


def string_equals(want: str, got: Value, fold: bool = False) -> Tri:
    if "${" in want:
        return None
    text = got if isinstance(got, str) else got.text
    if fold:
        want, text = want.casefold(), text.casefold()
    complete = isinstance(got, str) or got.complete
    if complete and want == text:
        return True
    if not _has_token(want) and not want.startswith(_prefix(text)):
        return False
    return None if _has_token(want + text) or not complete else False


def _arn_parts(text: str) -> list[str] | None:
    parts = text.split(":", 5)
    return parts if len(parts) == 6 else None


def arn_like(want: str, got: Value) -> Tri:
    """ArnEquals / ArnLike: the six parts matched one by one (``arn:partition:service:region:account:resource``)."""
    pattern = _arn_parts(want)
    text = got if isinstance(got, str) else got.text
    complete = isinstance(got, str) or got.complete
    parts = _arn_parts(text)
    if pattern is None:
        return False
    if parts is None:
        return False if complete and not _has_token(text) else None  # not an ARN / not known far enough
    heads = [glob(p, Unknown(v, True) if _has_token(v) else v) for p, v in zip(pattern[:5], parts[:5], strict=True)]
    tail: Value = parts[5] if complete and not _has_token(parts[5]) else Unknown(parts[5], complete)
    return all3([*heads, glob(pattern[5], tail)])


def _number(text: str) -> Decimal | None:
    try:
        return Decimal(text.strip())
    except InvalidOperation:
        return None


def _date(text: str) -> datetime | None:
    text = text.strip()
    try:
        if text.isdigit():
            return datetime.fromtimestamp(int(text), UTC)
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ValueError, OverflowError):
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _plain(*texts: Value) -> bool:
    return all(isinstance(t, str) and not _has_token(t) for t in texts)


def ordered(parse: Callable[[str], Decimal | datetime | None], compare: str) -> Test:
    """A Numeric* or Date* test: ``compare`` is one of ``== < <= > >=`` (request value on the left)."""

    def test(want: str, got: Value) -> Tri:
        if not isinstance(got, str) or not _plain(want, got):
            return None
        w, g = parse(want), parse(got)
        if w is None or g is None:
            return None
        return {
            "==": g == w,
            "<": g < w,  # type: ignore[operator]
            "<=": g <= w,  # type: ignore[operator]
            ">": g > w,  # type: ignore[operator]
            ">=": g >= w,  # type: ignore[operator]
        }[compare]

    return test


def boolean(want: str, got: Value) -> Tri:
    flags = ("true", "false")
    if not isinstance(got, str) or not _plain(want, got) or want.lower() not in flags or got.lower() not in flags:
        return None
    return want.lower() == got.lower()


def binary_equals(want: str, got: Value) -> Tri:
    if not isinstance(got, str) or not _plain(want, got):
        return None
    try:
        return base64.b64decode(want, validate=True) == base64.b64decode(got, validate=True)
    except (binascii.Error, ValueError):
        return None


def ip_address(want: str, got: Value) -> Tri:
    if not isinstance(got, str) or not _plain(want, got):
        return None
    try:
        network, address = ipaddress.ip_network(want.strip(), strict=False), ipaddress.ip_address(got.strip())
    except ValueError:
        return None
    return address.version == network.version and address in network


NUMBER, DATE = _number, _date
