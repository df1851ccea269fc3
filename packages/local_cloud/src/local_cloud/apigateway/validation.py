"""Request validation as a REST API's request validator does it, before the integration runs.

https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-method-request-validation.html:
required request parameters are checked for presence (and non-blank), the body against the
method's model for the request's content type (JSON Schema draft 4). Failing parameters give the
``BAD_REQUEST_PARAMETERS`` gateway response ("Missing required request parameters: [name, ...]"),
a failing body ``BAD_REQUEST_BODY`` ("Invalid request body") with
``$context.error.validationErrorString`` in the shape of AWS's validator (the messages of the
Java json-schema-validator API Gateway reports, e.g.
``[object has missing required properties (["currency"])]``). fastjsonschema validates (it
supports draft-04) and stops at the first error, so the string names one rule where AWS may list
several.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import fastjsonschema

DRAFT_04 = "http://json-schema.org/draft-04/schema#"

#: JSON type names as the validator reports them.
_TYPE_NAMES = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null", float: "number"}


def missing_parameters(required: Mapping[str, bool], params: Mapping[str, Mapping[str, str]]) -> list[str]:
    """The names of required ``method.request.{path,querystring,header}.X`` absent or blank."""
    missing = []
    for key, is_required in required.items():
        if not is_required or not key.startswith("method.request."):
            continue
        kind, _, name = key[len("method.request.") :].partition(".")
        values = params.get(kind, {})
        if kind == "header":
            value = next((v for k, v in values.items() if k.lower() == name.lower()), None)
        else:
            value = values.get(name)
        if value is None or not str(value).strip():
            missing.append(name)
    return missing


@lru_cache(maxsize=64)
def _validator(schema_json: str) -> Any:
    schema = json.loads(schema_json)
    schema.setdefault("$schema", DRAFT_04)
    return fastjsonschema.compile(schema)


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return _TYPE_NAMES.get(type(value), "object")


def _quoted(values: Any) -> str:
    return "[" + ",".join(json.dumps(v) for v in values) + "]"


def describe(error: fastjsonschema.JsonSchemaValueException) -> str:
    """One fastjsonschema error in the words of AWS's validator."""
    rule, definition, value = error.rule, error.rule_definition, error.value
    if rule == "required":
        absent = [p for p in definition if not isinstance(value, dict) or p not in value]
        return f"object has missing required properties ({_quoted(absent)})"
    if rule == "type":
        allowed = definition if isinstance(definition, list) else [definition]
        return (
            f"instance type ({_type_name(value)}) does not match any allowed primitive type "
            f"(allowed: {_quoted(allowed)})"
        )
    if rule == "additionalProperties":
        return "object instance has properties which are not allowed by the schema: " + _quoted(
            sorted(k for k in (value or {}) if k not in ((error.definition or {}).get("properties") or {}))
        )
    if rule == "pattern":
        return f"ECMA 262 regex {json.dumps(definition)} does not match input string {json.dumps(value)}"
    if rule == "minLength":
        return f"string {json.dumps(value)} is too short (length: {len(value)}, required minimum: {definition})"
    if rule == "maxLength":
        return f"string {json.dumps(value)} is too long (length: {len(value)}, maximum allowed: {definition})"
    if rule == "minimum":
        return f"numeric instance is lower than the required minimum (minimum: {definition}, found: {value})"
    if rule == "maximum":
        return f"numeric instance is greater than the required maximum (maximum: {definition}, found: {value})"
    if rule == "minItems":
        return f"array is too short: must have at least {definition} elements but instance has {len(value)} elements"
    if rule == "maxItems":
        return f"array is too long: must have at most {definition} elements but instance has {len(value)} elements"
    if rule == "enum":
        return f"instance value ({json.dumps(value)}) not found in enum (possible values: {_quoted(definition)})"
    return str(error.message)


def body_errors(schema: Mapping[str, Any], body: str) -> str | None:
    """``None`` if ``body`` satisfies ``schema``, else the validation error string (``[...]``)."""
    try:
        data = json.loads(body) if body.strip() else None
    except (ValueError, RecursionError) as exc:  # too deep to parse is invalid JSON to the validator too
        return f"[Invalid JSON in request body: {type(exc).__name__}]"
    try:
        _validator(json.dumps(schema, sort_keys=True))(data)
    except fastjsonschema.JsonSchemaValueException as exc:
        return f"[{describe(exc)}]"
    return None
