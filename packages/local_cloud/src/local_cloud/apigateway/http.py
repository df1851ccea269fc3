"""The HTTP side of a REST API stage: the request and response as the server sees them, header lookup, media
types, and which resource template a path matches (``{id}``, ``{proxy+}``) and how specifically."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass
class Request:
    """An HTTP request as the server received it."""

    method: str
    path: str  # "/<stage>/<resource path>", without the query string
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes
    url: str  # as the client addressed it (for SigV4): "http://<Host><path>[?query]"
    source_ip: str = "127.0.0.1"


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes


@dataclass
class Trace:
    """What one request did, for the access log and tests."""

    context: dict[str, Any]
    integration_calls: int = 0


def header(headers: Mapping[str, str], name: str) -> str | None:
    """A header's value, its name matched case-insensitively (HTTP header names are)."""
    lowered = name.lower()
    return next((v for k, v in headers.items() if k.lower() == lowered), None)


def media_type(value: str | None) -> str:
    """A Content-Type or Accept value's media type, without parameters (``application/json`` when absent)."""
    return (value or "application/json").split(";", 1)[0].strip().lower() or "application/json"


def path_parameters(template: str, path: str) -> dict[str, str] | None:
    """Path parameters if ``path`` matches the resource ``template`` (``{id}``, ``{proxy+}``)."""
    want = [s for s in template.split("/") if s]
    got = [s for s in path.split("/") if s]
    params: dict[str, str] = {}
    for i, part in enumerate(want):
        if part.startswith("{") and part.endswith("+}"):
            if i >= len(got):
                return None
            params[part[1:-2]] = "/".join(got[i:])
            return params
        if i >= len(got):
            return None
        if part.startswith("{") and part.endswith("}"):
            params[part[1:-1]] = got[i]
        elif part != got[i]:
            return None
    return params if len(want) == len(got) else None


def specificity(template: str) -> tuple[int, ...]:
    """Literal segments outrank parameters, which outrank a greedy ``{proxy+}``."""
    return tuple(2 if not s.startswith("{") else 0 if s.endswith("+}") else 1 for s in template.split("/") if s)
