"""One request through a REST API stage, in the order API Gateway applies its steps.

route (unknown resource or method: 403 "Missing Authentication Token", as a REST API answers) ->
payload size (over 10 MB: ``REQUEST_TOO_LARGE`` 413; "Payload size 10 MB, cannot be increased",
https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-execution-service-limits-table.html)
-> authorization (``AWS_IAM``: SigV4, :mod:`.auth`) -> throttling (token buckets: the account's
10,000 requests per second with a 5,000 burst, the stage's and method's settings, a usage plan's
per-method limits for methods that require an API key;
https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-request-throttling.html)
-> request validation (:mod:`.validation`) -> integration request (mapping template chosen by
content type, passthrough behaviour, request parameter mapping) -> the integration
(:mod:`.integrations`) -> integration response (``SelectionPattern`` against the status code,
template, response parameters, ``$context.responseOverride``) -> access log line.

API Gateway's own errors are gateway responses: the template's ``AWS::ApiGateway::GatewayResponse``
for that type (or its ``DEFAULT_4XX`` / ``DEFAULT_5XX``), else AWS's default
``{"message":$context.error.messageString}`` with the type's status
(https://docs.aws.amazon.com/apigateway/latest/developerguide/supported-gateway-response-types.html).
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
import traceback
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import airspeed

from local_cloud.apigateway.auth import AuthFailure, verify_sigv4
from local_cloud.apigateway.integrations import AwsIntegrations, IntegrationError, IntegrationResult
from local_cloud.apigateway.model import Integration, Method, RestApi, Stage, Throttle
from local_cloud.apigateway.validation import body_errors, missing_parameters
from local_cloud.apigateway.vtl import (
    _json_path,
    java_values,
    render,
    substitute,
    substitute_with,
    template_variables,
)
from local_cloud.apigateway.xray import XRayStage
from local_cloud.limits import TokenBucket
from local_cloud.service_metrics import ServiceMetrics
from local_cloud.template import ACCOUNT

#: REST API payload size: 10 MB, cannot be increased (REST quotas page, above).
MAX_PAYLOAD_BYTES = 10 * 1024 * 1024
#: Account-level throttling per Region: 10,000 requests per second, burst 5,000 (throttling page, above).
ACCOUNT_RATE, ACCOUNT_BURST = 10_000.0, 5_000.0

MAX_KEPT_LOG_LINES = 10_000
#: Gateway response type -> (default status, x-amzn-ErrorType), per the response types page.
RESPONSE_TYPES: dict[str, tuple[int, str]] = {
    "ACCESS_DENIED": (403, "AccessDeniedException"),
    "API_CONFIGURATION_ERROR": (500, "InternalServerErrorException"),
    "BAD_REQUEST_BODY": (400, "BadRequestException"),
    "BAD_REQUEST_PARAMETERS": (400, "BadRequestException"),
    "EXPIRED_TOKEN": (403, "ExpiredTokenException"),
    "INTEGRATION_FAILURE": (504, "InternalServerErrorException"),
    "INTEGRATION_TIMEOUT": (504, "InternalServerErrorException"),
    "INVALID_API_KEY": (403, "ForbiddenException"),
    "INVALID_SIGNATURE": (403, "InvalidSignatureException"),
    "MISSING_AUTHENTICATION_TOKEN": (403, "MissingAuthenticationTokenException"),
    "QUOTA_EXCEEDED": (429, "LimitExceededException"),
    "REQUEST_TOO_LARGE": (413, "RequestTooLargeException"),
    "RESOURCE_NOT_FOUND": (404, "ResourceNotFoundException"),
    "THROTTLED": (429, "TooManyRequestsException"),
    "UNAUTHORIZED": (401, "UnauthorizedException"),
    "UNSUPPORTED_MEDIA_TYPE": (415, "UnsupportedMediaTypeException"),
    # Not customisable types of their own (they fall under DEFAULT_4XX): SigV4's other refusals.
    "INCOMPLETE_SIGNATURE": (403, "IncompleteSignatureException"),
    "UNRECOGNIZED_CLIENT": (403, "UnrecognizedClientException"),
}
DEFAULT_GATEWAY_TEMPLATE = '{"message":$context.error.messageString}'


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


def _header(headers: Mapping[str, str], name: str) -> str | None:
    lowered = name.lower()
    return next((v for k, v in headers.items() if k.lower() == lowered), None)


def _media_type(value: str | None) -> str:
    return (value or "application/json").split(";", 1)[0].strip().lower() or "application/json"


def _segments_match(template: str, path: str) -> dict[str, str] | None:
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


def _specificity(template: str) -> tuple[int, ...]:
    """Literal segments outrank parameters, which outrank a greedy ``{proxy+}``."""
    return tuple(2 if not s.startswith("{") else 0 if s.endswith("+}") else 1 for s in template.split("/") if s)


class RestApiGateway:
    """Serves one REST API's stages (``/<stage>/<path>``) from its template resources."""

    def __init__(
        self,
        api: RestApi,
        integrations: AwsIntegrations,
        secrets: Mapping[str, str],
        *,
        access_log: Callable[[str, str], None] | None = None,
        now: Callable[[], float] = time.monotonic,
        metrics: ServiceMetrics | None = None,
    ) -> None:
        self.api = api
        self.xray = XRayStage()
        self.integrations = integrations
        self.secrets = dict(secrets)
        self.access_log = access_log  # (log group, line)
        self.metrics = metrics  # AWS/ApiGateway Count, 4XXError, 5XXError per answered request
        self.now = now
        self.account_bucket = TokenBucket(ACCOUNT_BURST, ACCOUNT_RATE, now)
        self._buckets: dict[tuple[str, ...], TokenBucket] = {}
        self._lock = threading.Lock()
        #: The latest access log lines (group, line), in order (a long ``local up`` keeps the last ones only).
        self.log_lines: deque[tuple[str, str]] = deque(maxlen=MAX_KEPT_LOG_LINES)
        self.throttled = 0

    # -- routing ---------------------------------------------------------------------------------
    def route(self, request: Request) -> tuple[Stage, Method, dict[str, str]] | None:
        stage_name, _, rest = request.path.lstrip("/").partition("/")
        stage = self.api.stages.get(stage_name)
        if stage is None:
            return None
        path = "/" + rest
        candidates = []
        for method in self.api.methods:
            params = _segments_match(method.path, path)
            if params is not None and method.http_method in (request.method.upper(), "ANY"):
                candidates.append((_specificity(method.path), method.http_method != "ANY", method, params))
        if not candidates:
            return None
        _, _, method, params = max(candidates, key=lambda c: (c[0], c[1]))
        return stage, method, params

    # -- the pipeline ----------------------------------------------------------------------------
    def handle(self, request: Request) -> Response:
        """The response API Gateway would give; a bug of ours or a template that raises is a 500."""
        try:
            return self._handle(request)
        except Exception:  # a long-running server answers and keeps serving
            traceback.print_exc(file=sys.stderr)
            context = self._context(request)
            response = self.gateway_response("API_CONFIGURATION_ERROR", "Internal server error", context, {})
            stage = request.path.lstrip("/").partition("/")[0]
            if self.metrics is not None and stage in self.api.stages:  # a 500 of the stage is in its 5XXError
                self.metrics.api_request(self.api.name, stage, response.status)
            return response

    def _handle(self, request: Request) -> Response:
        started = time.monotonic()
        context = self._context(request)
        routed = self.route(request)
        stage_vars: Mapping[str, str] = {}
        if routed is None:
            response = self.gateway_response(
                "MISSING_AUTHENTICATION_TOKEN", "Missing Authentication Token", context, {}
            )
            return self._finish(response, context, None, started)
        stage, method, path_params = routed
        stage_vars = stage.variables
        context.update(java_values({"stage": stage.name, "resourcePath": method.path, "resourceId": method.path}))
        if stage.tracing_enabled:
            context["xrayTraceId"] = java_values(self.xray.trace_header(_header(request.headers, "X-Amzn-Trace-Id")))
        params = {
            "path": path_params,
            "querystring": dict(request.query),
            "header": dict(request.headers),
        }
        response = self._pipeline(request, stage, method, params, context)
        return self._finish(response, context, stage, started, stage_vars)

    def _pipeline(
        self, request: Request, stage: Stage, method: Method, params: dict[str, dict[str, str]], context: dict[str, Any]
    ) -> Response:
        if len(request.body) > MAX_PAYLOAD_BYTES:
            return self.gateway_response("REQUEST_TOO_LARGE", "Request Too Long", context, params, stage)
        if method.authorization_type == "AWS_IAM":
            verdict = verify_sigv4(request.method, request.url, request.headers, request.body, self.secrets)
            if isinstance(verdict, AuthFailure):
                return self.gateway_response(verdict.response_type, verdict.message, context, params, stage)
            context["identity"].update(
                accessKey=verdict.access_key,
                caller=verdict.access_key,
                user=verdict.access_key,
                accountId=ACCOUNT,
                userArn=f"arn:aws:iam::{ACCOUNT}:user/{verdict.access_key}",  # one IAM user per local key
            )
        if not self._take(stage, method, request):
            return self.gateway_response("THROTTLED", "Too Many Requests", context, params, stage)
        validator = method.validator
        if validator is not None and validator.parameters:
            missing = missing_parameters(method.request_parameters, params)
            if missing:
                message = f"Missing required request parameters: [{', '.join(missing)}]"
                context["error"]["validationErrorString"] = message
                return self.gateway_response("BAD_REQUEST_PARAMETERS", message, context, params, stage)
        body = request.body.decode("utf-8", errors="replace")
        content_type = _media_type(_header(request.headers, "Content-Type"))
        if validator is not None and validator.body:
            model = method.request_models.get(content_type) or method.request_models.get("$default")
            schema = self.api.models.get(model) if model else None
            if schema is not None:
                errors = body_errors(schema, body)
                if errors is not None:
                    context["error"]["validationErrorString"] = errors
                    return self.gateway_response("BAD_REQUEST_BODY", "Invalid request body", context, params, stage)
        integration = method.integration
        if integration is None:
            return self.gateway_response("API_CONFIGURATION_ERROR", "Internal server error", context, params, stage)
        return self._integrate(integration, body, content_type, params, context, stage, request)

    # -- integration request, call, integration response ------------------------------------------
    def _integrate(
        self,
        integration: Integration,
        body: str,
        content_type: str,
        params: dict[str, dict[str, str]],
        context: dict[str, Any],
        stage: Stage,
        request: Request,
    ) -> Response:
        templates = integration.request_templates
        template = templates.get(content_type)
        behaviour = integration.passthrough_behavior
        if template is None and (behaviour == "NEVER" or (behaviour == "WHEN_NO_TEMPLATES" and templates)):
            return self.gateway_response("UNSUPPORTED_MEDIA_TYPE", "Unsupported Media Type", context, params, stage)
        try:
            rendered = (
                render(template, template_variables(body, params, context, stage.variables))
                if template is not None
                else body
            )
        except airspeed.TemplateError:
            return self.gateway_response("API_CONFIGURATION_ERROR", "Internal server error", context, params, stage)
        headers = {
            key.split(".", 3)[3]: value
            for key, source in integration.request_parameters.items()
            if key.startswith("integration.request.header.")
            and (value := self._source(source, params, context, stage, body)) is not None
        }
        override = context.get("requestOverride", {})
        headers.update({str(k): str(v) for k, v in (override.get("header") or {}).items() if v is not None})
        called = time.monotonic()
        try:
            if integration.type == "MOCK":
                result = self._mock(rendered)
            elif integration.type == "AWS":
                result = self.integrations.call(integration, rendered, headers)
            else:
                raise IntegrationError(f"integration type {integration.type} is not served locally")
        except IntegrationError:
            return self.gateway_response("API_CONFIGURATION_ERROR", "Internal server error", context, params, stage)
        context["integrationLatency"] = int((time.monotonic() - called) * 1000)
        context["integrationStatus"] = str(result.status)
        context["integration"] = {"status": str(result.status), "latency": context["integrationLatency"], "error": ""}
        return self._integration_response(integration, result, params, context, stage, request)

    @staticmethod
    def _mock(rendered: str) -> IntegrationResult:
        try:
            status = int(json.loads(rendered or "{}").get("statusCode", 200))
        except (ValueError, AttributeError):
            status = 500
        return IntegrationResult(status, "")

    def _integration_response(
        self,
        integration: Integration,
        result: IntegrationResult,
        params: dict[str, dict[str, str]],
        context: dict[str, Any],
        stage: Stage,
        request: Request,
    ) -> Response:
        status_text = str(result.status)
        chosen = next(
            (
                r
                for r in integration.responses
                if r.selection_pattern and re.fullmatch(r.selection_pattern, status_text)
            ),
            None,
        ) or next((r for r in integration.responses if not r.selection_pattern), None)
        if chosen is None:
            return self.gateway_response("API_CONFIGURATION_ERROR", "Internal server error", context, params, stage)
        accept = _media_type(_header(request.headers, "Accept")) if _header(request.headers, "Accept") else None
        if chosen.templates:
            content_type = (
                accept
                if accept in chosen.templates
                else ("application/json" if "application/json" in chosen.templates else next(iter(chosen.templates)))
            )
            try:
                body = render(
                    chosen.templates[content_type], template_variables(result.body, params, context, stage.variables)
                )
            except airspeed.TemplateError:
                return self.gateway_response("API_CONFIGURATION_ERROR", "Internal server error", context, params, stage)
        else:
            content_type, body = "application/json", result.body
        headers = {"Content-Type": content_type}
        for key, source in chosen.parameters.items():
            if key.startswith("method.response.header."):
                value = self._source(source, params, context, stage, result.body, result.headers)
                if value is not None:
                    headers[key[len("method.response.header.") :]] = value
        status = int(chosen.status_code)
        override = context.get("responseOverride", {})
        if str(override.get("status") or "").strip():
            status = int(str(override["status"]))
        for name, value in (override.get("header") or {}).items():
            if value is not None and str(value) != "":
                headers[str(name)] = str(value)
        return Response(status, headers, body.encode())

    @staticmethod
    def _source(
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
                return _header(params.get("header", {}), name)
            return params.get(kind, {}).get(name)
        if source.startswith("integration.response.header."):
            return _header(integration_headers or {}, source.split(".", 3)[3])
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

    # -- throttling ------------------------------------------------------------------------------
    def _bucket(self, key: tuple[str, ...], throttle: Throttle) -> TokenBucket:
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is None:
                bucket = self._buckets[key] = TokenBucket(throttle.burst, throttle.rate, self.now)
            return bucket

    def _take(self, stage: Stage, method: Method, request: Request) -> bool:
        buckets = [self.account_bucket]
        method_throttle = stage.method_throttles.get((method.path, method.http_method)) or stage.default_throttle
        if method_throttle is not None:
            buckets.append(self._bucket(("method", stage.name, method.path, method.http_method), method_throttle))
        api_key = _header(request.headers, "x-api-key")
        if method.api_key_required and api_key:
            plan = stage.usage_plan_method_throttles.get((method.path, method.http_method)) or stage.usage_plan_throttle
            if plan is not None:
                buckets.append(self._bucket(("plan", stage.name, api_key, method.path, method.http_method), plan))
        if all(b.take() for b in reversed(buckets)):  # most specific first: a refusal there spends nothing above
            return True
        with self._lock:
            self.throttled += 1
        return False

    # -- gateway responses -----------------------------------------------------------------------
    def gateway_response(
        self,
        response_type: str,
        message: str,
        context: dict[str, Any],
        params: Mapping[str, Mapping[str, str]],
        stage: Stage | None = None,
    ) -> Response:
        status, error_type = RESPONSE_TYPES.get(response_type, (403, "ForbiddenException"))
        custom = self.api.gateway_responses.get(response_type)
        if custom is not None and custom.status_code:
            status = int(custom.status_code)
        if custom is None:
            custom = self.api.gateway_responses.get("DEFAULT_5XX" if status >= 500 else "DEFAULT_4XX")
        context["error"].update(message=message, messageString=json.dumps(message), responseType=response_type)
        variables = stage.variables if stage else {}
        templates = custom.templates if custom is not None and custom.templates else {}
        content_type = "application/json" if "application/json" in templates or not templates else next(iter(templates))
        body = substitute_with(templates.get(content_type, DEFAULT_GATEWAY_TEMPLATE), context, variables, missing="")
        headers = {"Content-Type": content_type, "x-amzn-ErrorType": error_type}
        for key, source in (custom.parameters if custom is not None else {}).items():
            if key.startswith("gatewayresponse.header."):
                value = self._source(source, params, context, stage or _NO_STAGE, "")
                if value is not None:
                    headers[key[len("gatewayresponse.header.") :]] = value
        return Response(status, headers, body.encode())

    # -- context and access log ------------------------------------------------------------------
    def _context(self, request: Request) -> dict[str, Any]:
        now = datetime.now(UTC)
        request_id = str(uuid.uuid4())
        return java_values(
            {
                "requestId": request_id,
                "extendedRequestId": request_id.replace("-", "")[:16],
                "apiId": self.api.api_id,
                "accountId": ACCOUNT,
                "httpMethod": request.method.upper(),
                "path": request.path,
                "protocol": "HTTP/1.1",
                "domainName": _header(request.headers, "Host") or "",
                "requestTime": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
                "requestTimeEpoch": int(now.timestamp() * 1000),
                "identity": {"sourceIp": request.source_ip, "userAgent": _header(request.headers, "User-Agent") or ""},
                "error": {"message": "", "messageString": "", "responseType": "", "validationErrorString": ""},
                "responseOverride": {"status": "", "header": {}},
                "integration": {"status": "", "latency": "", "error": ""},
                "requestOverride": {"header": {}, "path": {}, "querystring": {}},
            }
        )

    def _finish(
        self,
        response: Response,
        context: dict[str, Any],
        stage: Stage | None,
        started: float,
        stage_vars: Mapping[str, str] | None = None,
    ) -> Response:
        response.headers.setdefault("x-amzn-RequestId", context["requestId"])
        if context.get("xrayTraceId"):
            response.headers.setdefault("X-Amzn-Trace-Id", str(context["xrayTraceId"]))
        context["status"] = str(response.status)
        if stage is not None and self.metrics is not None:
            self.metrics.api_request(self.api.name, stage.name, response.status)
        context["responseLength"] = str(len(response.body))
        context["responseLatency"] = str(int((time.monotonic() - started) * 1000))
        if stage is not None and stage.access_log_group and stage.access_log_format:
            line = substitute_with(stage.access_log_format, context, stage_vars or {}, missing="-")
            with self._lock:
                self.log_lines.append((stage.access_log_group, line))
            if self.access_log is not None:
                self.access_log(stage.access_log_group, line)
        return response


_NO_STAGE = Stage(name="")
