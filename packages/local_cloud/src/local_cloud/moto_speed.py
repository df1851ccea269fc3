"""Speed patches of moto's request path and Step Functions interpreter (each registered and measured
in :mod:`local_cloud.patches_speed`; switched off by name with ``OPS_LOCAL_DISABLE_PATCHES``).

Why hand-written: moto recomputes per request what depends only on constants (URL patterns, a
class's method names, a state machine's definition, a JSONPath); these caches compute it once and
leave every answer as moto gives it."""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

from local_cloud.moto_data_speed import PARSE_CACHE_LIMIT
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


@contextmanager
def cached_serializer_keys() -> Iterator[None]:
    """moto's response serializer asks six alias providers, for every attribute of every value it
    serializes, which keys to look up (a DynamoDB item of 20 attributes: ~200 provider objects).
    For a plain ``dict`` the answer depends only on the picker, the shape, the shape's current
    parent (moto re-assigns it while walking) and the key, so it is computed once per combination;
    any other object is left to moto. The lookups themselves, and their order, are unchanged."""
    from moto.core.serialize import AttributePicker, ResponseSerializer, XFormedAttributePicker

    cache: dict[tuple[Any, ...], tuple[str, ...]] = {}

    def cached(owner: type, original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def get_possible_keys(self: Any, context: Any) -> Any:
            if type(context.obj) is not dict:
                return original(self, context)
            shape = context.shape
            parent = getattr(shape, "parent", None) if shape is not None else None
            # owner: XFormedAttributePicker's method calls AttributePicker's through super().
            key = (owner, type(self), tuple(self.alias_providers), shape, parent, context.key)
            found = cache.get(key)
            if found is None:
                found = cache[key] = tuple(original(self, context))
            return iter(found)

        return get_possible_keys

    member = ResponseSerializer._serialize_structure_member
    pickers = (AttributePicker, XFormedAttributePicker)

    @functools.wraps(member)
    def serialize_structure_member(self: Any, serialized: Any, value: Any, shape: Any, key: str) -> None:
        # A DynamoDB AttributeValue has ten members and carries one: skip a member of a plain dict
        # when none of the keys its picker would try is in the dict (the picker would answer
        # None, and moto skips None). Anything else, or a first sight, goes to moto.
        picker = self._value_picker
        if type(value) is dict and type(picker) in pickers and not picker.response_transformers:
            parent = getattr(shape, "parent", None) if shape is not None else None
            keys = cache.get((type(picker), type(picker), tuple(picker.alias_providers), shape, parent, key))
            if keys is not None and not any("." in k or k in value for k in keys):
                return
        member(self, serialized, value, shape, key)

    with ExitStack() as stack:
        for cls in pickers:
            stack.enter_context(mock.patch.object(cls, "get_possible_keys", cached(cls, cls.get_possible_keys)))
        stack.enter_context(
            mock.patch.object(ResponseSerializer, "_serialize_structure_member", serialize_structure_member)
        )
        yield


@contextmanager
def cached_action_names() -> Iterator[None]:
    """moto lists a response class's methods (``inspect.getmembers``) on every request to find the
    action's handler; a class's method names do not change while the run lasts."""
    from moto.core import responses

    with mock.patch.object(
        responses, "method_names_from_class", functools.lru_cache(maxsize=256)(responses.method_names_from_class)
    ):
        yield


Handler = tuple[str, Callable[..., Any]]  # a service's name and the function moto dispatches a URL to


def _url_handler(handlers: dict[str, Handler], clean_url: str) -> Handler | None:
    """The service and handler moto would dispatch ``clean_url`` to, found once per URL (``handlers``: the cache)."""
    found = handlers.get(clean_url)
    if found is not None:
        return found
    import moto.backend_index as backend_index
    import moto.backends as backends
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.core.base_backend import BackendDict

    for service, pattern in backend_index.backend_url_patterns:
        if not pattern.match(clean_url):
            continue
        backend_dict = backends.get_backend(service)  # type: ignore[call-overload]
        if isinstance(backend_dict, BackendDict):
            regions = backend_dict[DEFAULT_ACCOUNT_ID]
            backend = regions["us-east-1"] if "us-east-1" in regions else regions["aws"]
        else:
            backend = backend_dict["global"]
        for url, method in backend.urls.items():
            if re.compile(url).match(clean_url):
                # Only a handler that is not bound to a backend instance is the same for every request.
                if isinstance(getattr(method, "__self__", type), type) and len(handlers) < PARSE_CACHE_LIMIT:
                    handlers[clean_url] = (service, method)
                return service, method
    return None  # moto goes on to the next service when no URL of the backend matches, and so does this


@contextmanager
def cached_url_dispatch() -> Iterator[None]:
    """moto finds the handler of every request by matching its URL against every service's URL
    patterns (about 120 regular expressions for a DynamoDB call), then compiling and matching the
    backend's own URL patterns. Which handler a URL reaches depends only on the URL (the patterns
    are module constants; the handlers are the response classes' ``dispatch`` functions), so it is
    found once per URL; passthrough and allow-list settings are still checked on every request,
    and the request is normalised, recorded and handled as moto does."""
    from moto.core import botocore_stubber
    from moto.core.config import passthrough_service, passthrough_url, service_whitelisted
    from moto.core.exceptions import HTTPException, ServiceNotWhitelisted
    from moto.core.request import normalize_request
    from moto.core.utils import get_equivalent_url_in_aws_domain

    original = botocore_stubber.BotocoreStubber.process_request
    handler_for = functools.partial(_url_handler, {})

    @functools.wraps(original)
    def process_request(self: Any, request: Any) -> Any:
        parsed_url, _ = get_equivalent_url_in_aws_domain(request.url)
        clean_url = f"{parsed_url.scheme}://{parsed_url.netloc}{parsed_url.path}"
        found = None if passthrough_url(clean_url) else handler_for(clean_url)
        if found is None:
            return original(self, request)  # passthrough, 404 or not implemented: moto answers as before
        service, method = found
        if passthrough_service(service):
            return None
        if not service_whitelisted(service):
            raise ServiceNotWhitelisted(service)
        from moto.moto_api import recorder

        normalized = normalize_request(request)
        try:
            recorder._record_request(normalized)
            status, headers, body = method(normalized, normalized.raw_url, normalized.headers)
        except HTTPException as e:
            status, headers, body = e.code, e.get_headers(), e.get_body()
        return status, headers, body

    with mock.patch.object(botocore_stubber.BotocoreStubber, "process_request", process_request):
        yield


#: The members of DynamoDB's AttributeValue that the JSON protocol writes as they are held (strings,
#: numbers as strings, booleans, sets of strings or numbers); ``B``/``BS`` are base64-encoded on the
#: wire, and ``L``/``M`` hold AttributeValues again.
_WIRE_SCALARS = {"S": str, "N": str, "BOOL": bool, "NULL": bool}
_WIRE_SETS = ("SS", "NS")


def _wire_ready(value: Any) -> bool:
    """Whether ``value`` is an AttributeValue whose JSON is itself: one member, and no binary at any depth."""
    if type(value) is not dict or len(value) != 1:
        return False
    ((member, held),) = value.items()
    kind = _WIRE_SCALARS.get(member)
    if kind is not None:
        return type(held) is kind
    if member in _WIRE_SETS:
        return type(held) is list and all(type(v) is str for v in held)
    if member == "L":
        return type(held) is list and all(_wire_ready(v) for v in held)
    if member == "M":
        return type(held) is dict and all(type(k) is str and _wire_ready(v) for k, v in held.items())
    return False


@contextmanager
def attribute_values_as_held() -> Iterator[None]:
    """moto's JSON serializer walks every DynamoDB AttributeValue through its shape (ten members, an
    alias lookup each, for every value of every item: two thirds of a GetItem of an order). An
    AttributeValue without binary is already its own JSON (moto holds DynamoDB JSON), so it is
    written as held; anything else (``B``, ``BS``, an unexpected member or type) goes to moto."""
    from moto.core.serialize import BaseJSONSerializer

    original = BaseJSONSerializer._serialize_type_structure

    @functools.wraps(original)
    def serialize_structure(self: Any, serialized: Any, value: Any, shape: Any, key: str) -> None:
        if key and shape.name == "AttributeValue" and _wire_ready(value):
            self._default_serialize(serialized, value, shape, key)
            return
        original(self, serialized, value, shape, key)

    with mock.patch.object(BaseJSONSerializer, "_serialize_type_structure", serialize_structure):
        yield
