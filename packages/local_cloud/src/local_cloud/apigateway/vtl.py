"""Mapping templates: API Gateway's ``$input``, ``$util`` and ``$context``, rendered by airspeed.

airspeed (a maintained Velocity engine on PyPI, which LocalStack also renders API Gateway
templates with) is the engine; the variables are ours, as in the mapping template reference:
https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-mapping-template-reference.html

Where API Gateway's Velocity (Java, 1.7) differs from airspeed, the difference is bridged without
patching airspeed:

- a null reference renders as an empty string on API Gateway, where Velocity prints the
  reference's own text (``$foo``): every reference outside a ``#set``/``#foreach`` target is
  rewritten to Velocity's quiet form (``$!foo``), see :func:`quiet_references`;
- Velocity 1.7 identifiers may contain ``-`` (``#set($context.responseOverride.header.X-Correlation-Id
  = $cid)``); airspeed's may not: such a ``#set`` becomes a ``put`` on the map, see
  :func:`hyphenated_targets`;
- strings the templates receive are :class:`JavaString`: Java's ``String`` methods with Java's
  semantics (``matches`` is a whole-string match, ``split`` takes a regex), where airspeed maps a few
  of them onto Python's (its ``matches`` is a prefix match).
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


class JavaString(str):
    """A ``java.lang.String`` as VTL sees it (the methods mapping templates use)."""

    def matches(self, regex: str) -> bool:
        return re.fullmatch(str(regex), self) is not None

    def length(self) -> int:
        return len(self)

    def trim(self) -> JavaString:
        return JavaString(self.strip(" \t\n\r\x0b\x0c\x00"))

    def toLowerCase(self) -> JavaString:
        return JavaString(self.lower())

    def toUpperCase(self) -> JavaString:
        return JavaString(self.upper())

    def contains(self, value: str) -> bool:
        return str(value) in self

    def startsWith(self, prefix: str) -> bool:
        return self.startswith(str(prefix))

    def endsWith(self, suffix: str) -> bool:
        return self.endswith(str(suffix))

    def equals(self, other: object) -> bool:
        return str(self) == other

    def equalsIgnoreCase(self, other: object) -> bool:
        return isinstance(other, str) and self.lower() == other.lower()

    def isEmpty(self) -> bool:
        return not self

    def indexOf(self, value: str) -> int:
        return self.find(str(value))

    def substring(self, start: int, end: int | None = None) -> JavaString:
        return JavaString(self[int(start) : None if end is None else int(end)])

    def replaceAll(self, regex: str, replacement: str) -> JavaString:
        return JavaString(re.sub(str(regex), str(replacement).replace("$", "\\"), self))

    def getBytes(self, charset: str = "UTF-8") -> JavaList:
        """``String.getBytes(charset)``: the encoded bytes (Velocity 1.7 calls ``size()`` on an array)."""
        return JavaList(self.encode(str(charset), "surrogatepass"))

    def split(self, regex: str | None = None, limit: int = 0) -> list[JavaString]:  # type: ignore[override]
        """Java's ``split``: a regex; trailing empty strings dropped."""
        parts = re.split(str(regex), self) if regex is not None else str(self).split()
        while parts and parts[-1] == "":
            parts.pop()
        return [JavaString(p) for p in parts]


class JavaList(list[Any]):
    """A ``java.util.List`` (or an array, which Velocity 1.7 treats as one) as VTL sees it."""

    def size(self) -> int:
        return len(self)

    def isEmpty(self) -> bool:
        return not self

    def contains(self, value: object) -> bool:
        return value in self

    def get(self, index: int) -> Any:
        return self[int(index)]

    def add(self, value: Any) -> bool:
        self.append(value)
        return True


class JavaMap(dict[Any, Any]):
    """A ``java.util.Map`` as VTL sees it (``$input.params().header``, ``$input.path('$')``)."""

    def containsKey(self, key: object) -> bool:
        return key in self

    def keySet(self) -> JavaList:
        return JavaList(self.keys())

    def put(self, key: Any, value: Any) -> Any:
        previous = self.get(key)
        self[key] = value
        return previous

    def putAll(self, values: dict[Any, Any]) -> None:
        self.update(values)

    def size(self) -> int:
        return len(self)

    def isEmpty(self) -> bool:
        return not self


def java_values(value: Any) -> Any:
    """``value`` with every string a :class:`JavaString`, every dict a :class:`JavaMap` (keys too) and
    every list a :class:`JavaList` (walked)."""
    if isinstance(value, JavaString):
        return value
    if isinstance(value, str):
        return JavaString(value)
    if isinstance(value, dict):
        return JavaMap({java_values(k): java_values(v) for k, v in value.items()})
    if isinstance(value, list):
        return JavaList(java_values(v) for v in value)
    return value


def _directive_end(template: str, start: int) -> int:
    """Index of the ``)`` closing the directive whose ``(`` is at ``start`` (quotes respected)."""
    depth, quote, i = 0, "", start
    while i < len(template):
        c = template[i]
        if quote:
            if c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


_HYPHEN_SET = re.compile(r"#set\s*\(\s*\$\{?((?:[A-Za-z_][\w-]*\.)*)([A-Za-z_][\w]*-[\w-]*)\}?\s*=")


def hyphenated_targets(template: str) -> str:
    """``#set($a.b.X-Y = v)`` -> ``#set($apigwDiscard = $a.b.put("X-Y", v))`` (Velocity 1.7 allows
    ``-`` in identifiers; airspeed does not). Only assignment targets are rewritten."""
    out: list[str] = []
    last = 0
    for match in _HYPHEN_SET.finditer(template):
        if match.start() < last:
            continue
        open_at = template.index("(", match.start())
        close_at = _directive_end(template, open_at)
        owner = match.group(1).rstrip(".")
        if close_at < 0 or not owner:
            continue
        value = template[match.end() : close_at].strip()
        out.append(template[last : match.start()])
        out.append(f'#set($apigwDiscard = ${owner}.put("{match.group(2)}", {value}))')
        last = close_at + 1
    out.append(template[last:])
    return "".join(out)


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
    compiled = airspeed.Template(quiet_references(hyphenated_targets(template)))
    compiled.ensure_compiled()  # parsed once, here: merge() from several threads then only reads it
    return compiled


def render(template: str, variables: Mapping[str, Any]) -> str:
    """Render a mapping template with ``variables`` (``input``, ``util``, ``context``, ...).

    Velocity 1.7 leaves a ``#set`` target unchanged when the value is null (``directive.set.null.allowed``
    is false by default); airspeed stores None. For the overrides API Gateway reads after a template
    (``$context.requestOverride`` / ``responseOverride``) a None is dropped, as if never set
    (tests/ops/test_two_engines.py)."""
    output = str(_compiled(template).merge(dict(variables)))
    context = variables.get("context")
    if isinstance(context, dict):
        for name in ("requestOverride", "responseOverride"):
            _drop_nulls(context.get(name))
    return output


def _drop_nulls(overrides: Any) -> None:
    if isinstance(overrides, dict):
        for key in [k for k, v in overrides.items() if v is None]:
            del overrides[key]
        for value in overrides.values():
            _drop_nulls(value)


def _json_path(data: Any, path: str) -> Any:
    """The value at ``path`` (``$``, ``$.a.b``, ``$.items[0]``); None when absent; a list when several match."""
    if path in ("$", ""):
        return java_values(data)
    matches = [m.value for m in jsonpath_parse(path).find(data)]
    if not matches:
        return None
    return java_values(matches[0] if len(matches) == 1 else matches)


class InputVariable:
    """``$input``: the payload (the method request's, or the integration response's) and the method
    request's parameters (path, query string, headers)."""

    def __init__(self, body: str, params: Mapping[str, Mapping[str, str]]) -> None:
        self.body = JavaString(body)
        self._params: dict[str, dict[str, Any]] = java_values({k: dict(v) for k, v in params.items()})
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

    def json(self, path: str = "$") -> JavaString:
        """``$input.json(x)``: the JSON at ``x``, as a JSON string."""
        return JavaString(json.dumps(_json_path(self._data(), path), separators=(",", ":")))

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
        return JavaString("")


_JS_CONTROL = {"\b": "\\b", "\n": "\\n", "\t": "\\t", "\f": "\\f", "\r": "\\r"}
_JS_QUOTED = {"'": "\\'", '"': '\\"', "\\": "\\\\", "/": "\\/"}


class UtilVariable:
    """``$util``: the reference's escaping and encoding helpers (results are :class:`JavaString`)."""

    @staticmethod
    def escapeJavaScript(text: Any) -> JavaString:
        """commons-lang 2's ``StringEscapeUtils.escapeJavaScript``: the one the reference describes
        (it "will turn any regular single quotes (') into escaped ones (\\')"): ``'`` ``"`` ``\\``
        and ``/`` backslash-escaped, control characters as ``\\b \\t \\n \\f \\r`` or
        ``\\u00XX``, every UTF-16 unit above 0x7f as ``\\uXXXX`` (upper-case hex)."""
        source = "" if text is None else str(text)
        units = source.encode("utf-16-be", "surrogatepass")
        out = []
        for i in range(0, len(units), 2):
            code = int.from_bytes(units[i : i + 2], "big")
            char = chr(code)
            if code > 0x7F or (code < 32 and char not in _JS_CONTROL):
                out.append(f"\\u{code:04X}")
            else:
                out.append(_JS_CONTROL.get(char) or _JS_QUOTED.get(char) or char)
        return JavaString("".join(out))

    @staticmethod
    def urlEncode(text: Any) -> JavaString:
        """``application/x-www-form-urlencoded`` encoding as Java's ``URLEncoder`` (UTF-8): letters,
        digits and ``.-*_`` kept, space as ``+``, everything else (``~`` too) percent-encoded."""
        encoded = urllib.parse.quote_plus("" if text is None else str(text), safe="*")
        return JavaString(encoded.replace("~", "%7E"))

    @staticmethod
    def urlDecode(text: Any) -> JavaString:
        return JavaString(urllib.parse.unquote_plus("" if text is None else str(text)))

    @staticmethod
    def base64Encode(text: Any) -> JavaString:
        return JavaString(base64.b64encode(str(text).encode()).decode())

    @staticmethod
    def base64Decode(text: Any) -> JavaString:
        return JavaString(base64.b64decode(str(text)).decode())

    @staticmethod
    def parseJson(text: Any) -> Any:
        return java_values(json.loads(str(text)))


def template_variables(
    body: str, params: Mapping[str, Mapping[str, str]], context: dict[str, Any], stage_variables: Mapping[str, str]
) -> dict[str, Any]:
    """The namespace one mapping template renders in."""
    return {
        "input": InputVariable(body, params),
        "util": UtilVariable(),
        "context": context,
        "stageVariables": java_values(dict(stage_variables)),
    }


_SUBSTITUTION = re.compile(r"\$(context|stageVariables)((?:\.[A-Za-z_][A-Za-z0-9_-]*)+)")


def substitute(template: str, context: Mapping[str, Any], stage_variables: Mapping[str, str]) -> str:
    """Variable substitution, not VTL: gateway responses' templates
    (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-swagger-extensions-gateway-responses.responseTemplates.html).
    An unknown or empty variable renders as ``""``; access logs use :func:`substitute_with` (``-``)."""
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
        return str(root) if str(root) != "" else missing  # an access log writes "-" for an empty value

    return _SUBSTITUTION.sub(value, template)
