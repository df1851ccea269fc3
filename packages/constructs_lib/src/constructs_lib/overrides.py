"""Pass-through props: a caller's overrides merged over a construct's defaults, checked at synth.

The way aws-solutions-constructs take ``queueProps`` / ``dynamoTableProps``: a construct builds
its resource from its own defaults, then applies whatever the caller passes, so a team can set an
option this library never thought of without forking it. Overrides are given either as the CDK
props struct (``sqs.QueueProps(...)``, ``lambda_.FunctionOptions(...)``, ``dynamodb.TableProps(...)``)
or as a plain mapping of the L2 constructor's keyword arguments.

Checked when the props are built, so a bad override fails synth with a message naming it:

- a key the L2 constructor does not take (a typo would otherwise be silently ignored);
- a key the construct owns (``owned``: e.g. the queue's ``dead_letter_queue``), with the field to use;
- a key given twice, once as a typed field of the construct's props and once as an override.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

#: A construct's pass-through props: the CDK props struct, or the L2 constructor's keyword arguments.
PassThrough = Mapping[str, Any] | object


def _constructor_keywords(target: type) -> tuple[str, ...]:
    """Keyword arguments of an L2 constructor or a jsii props struct (not ``self``, ``scope``, ``id``)."""
    params = inspect.signature(target.__init__).parameters  # type: ignore[misc]  # the class, not an instance
    return tuple(name for name in params if name not in ("self", "scope", "id"))


def as_kwargs(props: PassThrough | None) -> dict[str, Any]:
    """The keyword arguments a pass-through value sets (``None`` values are unset)."""
    if props is None:
        return {}
    if isinstance(props, Mapping):
        return {str(k): v for k, v in props.items() if v is not None}
    values = {name: getattr(props, name, None) for name in _constructor_keywords(type(props))}
    return {k: v for k, v in values.items() if v is not None}


def check_overrides(
    target: type,
    overrides: PassThrough | None,
    *,
    what: str,
    owned: Mapping[str, str] | None = None,
    typed: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Validate ``overrides`` for ``target``'s constructor and return them as keyword arguments.

    Args:
        target: the L2 class the overrides are passed to (``sqs.Queue``).
        overrides: the caller's pass-through props.
        what: the props field's name, for messages (``queue_props``).
        owned: keys the construct sets itself -> what to use instead.
        typed: the construct's typed fields that map to constructor keys -> their values; a key
            set both there (not ``None``) and in ``overrides`` is rejected as ambiguous.

    Raises:
        ValueError: on an unknown, owned or doubly given key.
    """
    values = as_kwargs(overrides)
    allowed = set(_constructor_keywords(target))
    unknown = sorted(set(values) - allowed)
    if unknown:
        raise ValueError(f"{what}: {target.__name__} takes no {', '.join(unknown)}")
    for key, instead in (owned or {}).items():
        if key in values:
            raise ValueError(f"{what}: {key} is set by the construct; use {instead}")
    for key, value in (typed or {}).items():
        if value is not None and key in values:
            raise ValueError(f"{key} given twice (as a typed prop and in {what}); give it once")
    return values
