"""The order API's body model: ``ORDER_SCHEMA`` (draft 7, as intake validates it) as the JSON Schema
draft 4 API Gateway models take; a keyword draft 4 lacks is refused at synth."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

#: JSON Schema draft 4, the only draft API Gateway models support
#: (https://docs.aws.amazon.com/apigateway/latest/developerguide/models-mappings-models.html).
DRAFT_04 = "http://json-schema.org/draft-04/schema#"
#: Every keyword draft 4 defines (https://json-schema.org/draft-04/json-schema-validation and the
#: core spec); ``ORDER_SCHEMA`` may use no other (``const``, ``contains``, ``if`` ... are draft 6+).
DRAFT_04_KEYWORDS = frozenset(
    {
        "$schema", "id", "$ref", "title", "description", "default", "format",
        "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
        "maxLength", "minLength", "pattern",
        "additionalItems", "items", "maxItems", "minItems", "uniqueItems",
        "maxProperties", "minProperties", "required", "additionalProperties", "definitions",
        "properties", "patternProperties", "dependencies",
        "enum", "type", "allOf", "anyOf", "oneOf", "not",
    }
)  # fmt: skip
#: Keywords whose value is one subschema, a list of them, or a map of them.
_SUBSCHEMA = frozenset({"additionalItems", "additionalProperties", "not", "items"})
_SUBSCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "items"})
_SUBSCHEMA_MAPS = frozenset({"properties", "patternProperties", "definitions", "dependencies"})


def draft04_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` with ``$schema`` set to draft 4; ``ValueError`` naming any keyword draft 4 lacks."""
    unknown = sorted(_keywords_outside_draft04(schema, "#"))
    if unknown:
        raise ValueError(f"ORDER_SCHEMA uses keywords JSON Schema draft 4 lacks: {', '.join(unknown)}")
    model = copy.deepcopy(dict(schema))
    model["$schema"] = DRAFT_04
    return model


def _keywords_outside_draft04(schema: Any, where: str) -> set[str]:
    if not isinstance(schema, Mapping):
        return set()
    found = {f"{key} (at {where})" for key in schema if key not in DRAFT_04_KEYWORDS}
    for key in ("exclusiveMaximum", "exclusiveMinimum"):
        if key in schema and not isinstance(schema[key], bool):  # draft 6+: a number; draft 4: a flag
            found.add(f"{key} as a number (at {where})")
    for key, value in schema.items():
        if key in _SUBSCHEMA and isinstance(value, Mapping):
            found |= _keywords_outside_draft04(value, f"{where}/{key}")
        if key in _SUBSCHEMA_LISTS and isinstance(value, list):
            for i, item in enumerate(value):
                found |= _keywords_outside_draft04(item, f"{where}/{key}/{i}")
        if key in _SUBSCHEMA_MAPS and isinstance(value, Mapping):
            for name, item in value.items():
                found |= _keywords_outside_draft04(item, f"{where}/{key}/{name}")
    return found


def edge_model_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The body model: ``schema`` as draft 4 without its top-level ``required``, which the request
    template checks instead so that the 400 names the missing property in valid JSON (a gateway
    response cannot escape ``$context.error.validationErrorString``, decision 0018)."""
    model = draft04_schema(schema)
    model.pop("required", None)
    return model
