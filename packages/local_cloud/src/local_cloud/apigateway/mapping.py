"""Parameter mappings of a REST API (integration request headers, method response headers, gateway response
headers): where a mapped value comes from.
https://docs.aws.amazon.com/apigateway/latest/developerguide/request-response-data-mappings.html
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from local_cloud.apigateway.http import header
from local_cloud.apigateway.model import Stage
from local_cloud.apigateway.vtl import _json_path, substitute


def mapped_value(
    source: str,
    params: Mapping[str, Mapping[str, str]],
    context: Mapping[str, Any],
    stage: Stage,
    body: str,
    integration_headers: Mapping[str, str] | None = None,
) -> str | None:
    """A parameter mapping's value: ``'static'``, ``method.request.{header,querystring,path}.X``,
    ``integration.response.header.X`` / ``.body[.JSONPath]``, ``context.X``, ``stageVariables.X``."""
    if len(source) >= 2 and source[0] == source[-1] == "'":
        return source[1:-1]
    if source.startswith("method.request."):
        kind, _, name = source[len("method.request.") :].partition(".")
        if kind == "header":
            return header(params.get("header", {}), name)
        return params.get(kind, {}).get(name)
    if source.startswith("integration.response.header."):
        return header(integration_headers or {}, source.split(".", 3)[3])
    if source == "integration.response.body":
        return body
    if source.startswith("integration.response.body."):
        try:
            found = _json_path(json.loads(body), "$." + source.split(".", 3)[3])
        except ValueError:
            return None
        return None if found is None else found if isinstance(found, str) else json.dumps(found)
    if source.startswith("context.") or source.startswith("stageVariables."):
        text = substitute("$" + source, context, stage.variables)
        return text or None
    return None
