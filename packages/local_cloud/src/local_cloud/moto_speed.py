"""The one speed change the emulator makes to moto: its Step Functions interpreter computes once what
depends only on constants (registered and measured in :mod:`local_cloud.patches_speed`; switched off
with ``OPS_LOCAL_DISABLE_PATCHES=moto_stepfunctions_speed`` or by patch name).

Why hand-written: moto's interpreter builds a boto3 client per task, parses the definition (ANTLR) per
execution and builds a JSONPath parser (PLY) per path; these caches compute each once and leave every
answer as moto gives it. As an upstream change to moto, the three belong together: the definition's
parse is cached per text, the task clients per service and Region, the paths per text."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

from local_cloud.moto_patches import step_functions_client_modules


@contextmanager
def cached_step_functions_clients() -> Iterator[None]:
    """moto's Step Functions interpreter builds a new boto3 client for every task it runs
    (each one re-reads service models from disk); reuse one client per service and region."""
    from moto.stepfunctions.parser.asl.utils import boto_client

    original = boto_client.boto_client_for
    cache: dict[tuple[str, str, bool], Any] = {}
    cache_lock = threading.Lock()

    def cached(region: str, service: str, state_credentials: Any = None) -> Any:
        from moto.core.models import botocore_stubber

        key = (region, service, bool(botocore_stubber.enabled))
        with cache_lock:
            if key not in cache:
                cache[key] = original(region, service, state_credentials)
            return cache[key]

    with ExitStack() as stack:
        for module in step_functions_client_modules():
            stack.enter_context(mock.patch.object(module, "boto_client_for", cached))
        yield


@contextmanager
def cached_asl_parse() -> Iterator[None]:
    """moto re-parses the state machine definition (ANTLR) for every execution; parse each
    definition once. The parsed program holds no per-execution state (that lives in moto's
    per-execution Environment), so sharing it is safe."""
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    original = AmazonStateLanguageParser.parse
    cache: dict[str, Any] = {}
    cache_lock = threading.Lock()

    def parse(definition: str) -> Any:
        with cache_lock:
            if definition not in cache:
                cache[definition] = original(definition)
            return cache[definition]

    with mock.patch.object(AmazonStateLanguageParser, "parse", staticmethod(parse)):
        yield


#: moto's modules that parse a JSONPath per evaluation, and the parser each one imported.
JSON_PATH_MODULES = (
    "moto.stepfunctions.parser.asl.utils.json_path",  # jsonpath_ng.ext.parse: InputPath, Parameters "x.$"
    "moto.stepfunctions.parser.asl.component.common.path.result_path",  # jsonpath_ng.parse: ResultPath
)


@contextmanager
def cached_json_path_parse() -> Iterator[None]:
    """moto's interpreter calls ``jsonpath_ng`` ``parse(path)`` for every path of every state it
    enters, and each call builds a new PLY parser (yacc tables). Parse each path once: a parsed
    expression holds no per-evaluation state (``find`` and ``update_or_create`` act on the data)."""
    import importlib

    with ExitStack() as stack:
        for name in JSON_PATH_MODULES:
            module = importlib.import_module(name)
            stack.enter_context(mock.patch.object(module, "parse", functools.lru_cache(maxsize=4096)(module.parse)))
        yield
