"""Mapping templates: API Gateway's ``$input``, ``$util`` and ``$context``, rendered by airspeed.

airspeed (a maintained Velocity engine on PyPI, which LocalStack also renders API Gateway
templates with) is the engine; the variables are ours, as in the mapping template reference:
https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-mapping-template-reference.html

API Gateway renders a null reference as an empty string, where Velocity prints the reference's
own text (``$foo``). Without patching airspeed, every reference outside a ``#set``/``#foreach``
target is rewritten to Velocity's quiet form (``$!foo``), which renders a null as empty: see
:func:`quiet_references`.
"""

from __future__ import annotations

import base64
import json
import re
import urllib.parse
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import airspeed
from jsonpath_ng import parse as jsonpath_parse

#: ``$name`` or ``${name`` not already quiet (``$!``), not escaped, not a ``#set``/``#foreach`` target.
_REFERENCE = re.compile(r"(?<![\\$])\$(?=\{?[A-Za-z_])")
_TARGET = re.compile(r"#(?:set|foreach)\s*\(\s*$")
#: A single-quoted literal inside an expression (after ``(``, ``,``, ``=`` or an operator).
_LITERAL = re.compile(r"(?<=[(,=\s])'[^'\n]*'")


def quiet_references(template: str) -> str:
    """``$x`` -> ``$!x`` (null renders as empty, as API Gateway does), except assignment and loop
    targets and text inside single-quoted literals (``$input.path('$.a')`` keeps its JSONPath)."""
    literals = [(m.start(), m.end()) for m in _LITERAL.finditer(template)]
    out: list[str] = []
    last = 0
    for match in _REFERENCE.finditer(template):
        at = match.start()
        if any(start < at < end for start, end in literals) or _TARGET.search(template[max(0, at - 20) : at]):
            continue
        out.append(template[last : at + 1])
        out.append("!")
        last = at + 1
    out.append(template[last:])
    return "".join(out)


@lru_cache(maxsize=256)
def _compiled(template: str) -> airspeed.Template:
    return airspeed.Template(quiet_references(template))


def render(template: str, variables: Mapping[str, Any]) -> str:
    """Render a mapping template with ``variables`` (``input``, ``util``, ``context``, ...)."""
    return str(_compiled(template).merge(dict(variables)))


def _json_path(data: Any, path: str) -> Any:
    """The value at ``path`` (``$``, ``$.a.b``, ``$.items[0]``); None when absent; a list when several match."""
    if path in ("$", ""):
        return data
    matches = [m.value for m in jsonpath_parse(path).find(data)]
    if not matches:
        return None
    return matches[0] if len(matches) == 1 else matches


class InputVariable:
    """``$input``: the payload (the method request's, or the integration response's) and the method
    request's parameters (path, query string, headers)."""

    def __init__(self, body: str, params: Mapping[str, Mapping[str, str]]) -> None:
        self.body = body
        self._params = {k: dict(v) for k, v in params.items()}
        self._parsed: Any = None
        self._parsed_ok = False

    def _data(self) -> Any:
        if not self._parsed_ok:
            try:
                self._parsed = json.loads(self.body) if self.body else {}
            except (ValueError, RecursionError):
                self._parsed = None
            self._parsed_ok = True
        return self._parsed

    def json(self, path: str = "$") -> str:
        """``$input.json(x)``: the JSON at ``x``, as a JSON string."""
        return json.dumps(_json_path(self._data(), path), separators=(",", ":"))

    def path(self, path: str) -> Any:
        """``$input.path(x)``: the object at ``x`` (for VTL to walk)."""
        return _json_path(self._data(), path)

    def params(self, name: str | None = None) -> Any:
        """``$input.params()``: {path, querystring, header}; ``$input.params(x)``: path, then
        query string, then header (case-insensitive), as the reference says."""
        if name is None:
            return self._params
        for kind in ("path", "querystring"):
            if name in self._params.get(kind, {}):
                return self._params[kind][name]
        lowered = name.lower()
        for key, value in self._params.get("header", {}).items():
            if key.lower() == lowered:
                return value
        return ""


class UtilVariable:
    """``$util``: the reference's escaping and encoding helpers."""

    @staticmethod
    def escapeJavaScript(text: Any) -> str:
        """JavaScript string escaping (a single quote becomes ``\\'``, as AWS's does)."""
        escaped = json.dumps("" if text is None else str(text))[1:-1]
        return escaped.replace("'", "\\'")

    @staticmethod
    def urlEncode(text: Any) -> str:
        """``application/x-www-form-urlencoded`` encoding (space as ``+``), as Java's URLEncoder."""
        return urllib.parse.quote_plus("" if text is None else str(text), safe="*")

    @staticmethod
    def urlDecode(text: Any) -> str:
        return urllib.parse.unquote_plus("" if text is None else str(text))

    @staticmethod
    def base64Encode(text: Any) -> str:
        return base64.b64encode(str(text).encode()).decode()

    @staticmethod
    def base64Decode(text: Any) -> str:
        return base64.b64decode(str(text)).decode()

    @staticmethod
    def parseJson(text: Any) -> Any:
        return json.loads(str(text))

    @staticmethod
    def escapeJson(text: Any) -> str:
        return json.dumps(str(text))[1:-1]


def template_variables(
    body: str, params: Mapping[str, Mapping[str, str]], context: dict[str, Any], stage_variables: Mapping[str, str]
) -> dict[str, Any]:
    """The namespace one mapping template renders in."""
    return {
        "input": InputVariable(body, params),
        "util": UtilVariable(),
        "context": context,
        "stageVariables": dict(stage_variables),
    }


_SUBSTITUTION = re.compile(r"\$(context|stageVariables)((?:\.[A-Za-z_][A-Za-z0-9_-]*)+)")


def substitute(template: str, context: Mapping[str, Any], stage_variables: Mapping[str, str]) -> str:
    """Variable substitution, not VTL: gateway responses' templates and access-log formats
    (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-swagger-extensions-gateway-responses.responseTemplates.html).
    An unknown variable renders as ``-`` in an access log; callers pass ``missing``."""
    return substitute_with(template, context, stage_variables, missing="")


def substitute_with(
    template: str, context: Mapping[str, Any], stage_variables: Mapping[str, str], *, missing: str
) -> str:
    def value(match: re.Match[str]) -> str:
        root: Any = context if match.group(1) == "context" else stage_variables
        for part in match.group(2).strip(".").split("."):
            root = root.get(part) if isinstance(root, Mapping) else None
            if root is None:
                return missing
        return str(root)

    return _SUBSTITUTION.sub(value, template)
