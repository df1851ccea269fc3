"""boto3 clients for the emulator's own calls (producer, poller, reporter): one per service and endpoint."""

from __future__ import annotations

import os
from typing import Any

import boto3

from local_cloud.template import REGION

_clients: dict[tuple[str, str | None], Any] = {}


def aws(service: str) -> Any:
    """The runner's client for ``service`` (creating clients is costly: each reads service models)."""
    key = (service, os.environ.get("AWS_ENDPOINT_URL"))
    if key not in _clients:
        _clients[key] = boto3.client(service, region_name=REGION)
    return _clients[key]


def moto_in_process() -> bool:
    """Whether the runner's clients reach moto in this process (``mock_aws``), so the report may read
    moto's backend directly; False when they reach a server through ``AWS_ENDPOINT_URL``."""
    return not os.environ.get("AWS_ENDPOINT_URL")
