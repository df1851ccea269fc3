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

API Gateway's own errors are gateway responses (:mod:`.gateway_responses`); the request and response,
headers and path matching are :mod:`.http`; parameter mappings' sources are :mod:`.mapping`.
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
from datetime import UTC, datetime
from typing import Any

import airspeed

from local_cloud.apigateway.auth import AuthFailure, verify_sigv4
from local_cloud.apigateway.gateway_responses import gateway_response
from local_cloud.apigateway.http import Request, Response, header, media_type, path_parameters, specificity
from local_cloud.apigateway.integrations import AwsIntegrations, IntegrationError, IntegrationResult
from local_cloud.apigateway.mapping import mapped_value
from local_cloud.apigateway.model import Integration, Method, RestApi, Stage, Throttle
from local_cloud.apigateway.validation import body_errors, missing_parameters
from local_cloud.apigateway.vtl import (
    java_values,
    render,
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
            params = path_parameters(method.path, path)
            if params is not None and method.http_method in (request.method.upper(), "ANY"):
                candidates.append((specificity(method.path), method.http_method != "ANY", method, params))
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
            response = gateway_response(self.api, "API_CONFIGURATION_ERROR", "Internal server error", context, {})
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
            response = gateway_response(
                self.api, "MISSING_AUTHENTICATION_TOKEN", "Missing Authentication Token", context, {}
            )
            return self._finish(response, context, None, started)
        stage, method, path_params = routed
        stage_vars = stage.variables
        context.update(java_values({"stage": stage.name, "resourcePath": method.path, "resourceId": method.path}))
        if stage.tracing_enabled:
            context["xrayTraceId"] = java_values(self.xray.trace_header(header(request.headers, "X-Amzn-Trace-Id")))
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
            return gateway_response(self.api, "REQUEST_TOO_LARGE", "Request Too Long", context, params, stage)
        if method.authorization_type == "AWS_IAM":
            verdict = verify_sigv4(request.method, request.url, request.headers, request.body, self.secrets)
            if isinstance(verdict, AuthFailure):
                return gateway_response(self.api, verdict.response_type, verdict.message, context, params, stage)
            context["identity"].update(
                accessKey=verdict.access_key,
                caller=verdict.access_key,
                user=verdict.access_key,
                accountId=ACCOUNT,
                userArn=f"arn:aws:iam::{ACCOUNT}:user/{verdict.access_key}",  # one IAM user per local key
            )
        if not self._take(stage, method, request):
            return gateway_response(self.api, "THROTTLED", "Too Many Requests", context, params, stage)
        validator = method.validator
        if validator is not None and validator.parameters:
            missing = missing_parameters(method.request_parameters, params)
            if missing:
                message = f"Missing required request parameters: [{', '.join(missing)}]"
                context["error"]["validationErrorString"] = message
                return gateway_response(self.api, "BAD_REQUEST_PARAMETERS", message, context, params, stage)
        body = request.body.decode("utf-8", errors="replace")
        content_type = media_type(header(request.headers, "Content-Type"))
        if validator is not None and validator.body:
            model = method.request_models.get(content_type) or method.request_models.get("$default")
            schema = self.api.models.get(model) if model else None
            if schema is not None:
                errors = body_errors(schema, body)
                if errors is not None:
                    context["error"]["validationErrorString"] = errors
                    return gateway_response(
                        self.api, "BAD_REQUEST_BODY", "Invalid request body", context, params, stage
                    )
        integration = method.integration
        if integration is None:
            return gateway_response(
                self.api, "API_CONFIGURATION_ERROR", "Internal server error", context, params, stage
            )
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
            return gateway_response(
                self.api, "UNSUPPORTED_MEDIA_TYPE", "Unsupported Media Type", context, params, stage
            )
        try:
            rendered = (
                render(template, template_variables(body, params, context, stage.variables))
                if template is not None
                else body
            )
        except airspeed.TemplateError:
            return gateway_response(
                self.api, "API_CONFIGURATION_ERROR", "Internal server error", context, params, stage
            )
        headers = {
            key.split(".", 3)[3]: value
            for key, source in integration.request_parameters.items()
            if key.startswith("integration.request.header.")
            and (value := mapped_value(source, params, context, stage, body)) is not None
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
            return gateway_response(
                self.api, "API_CONFIGURATION_ERROR", "Internal server error", context, params, stage
            )
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
            return gateway_response(
                self.api, "API_CONFIGURATION_ERROR", "Internal server error", context, params, stage
            )
        accept = media_type(header(request.headers, "Accept")) if header(request.headers, "Accept") else None
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
                return gateway_response(
                    self.api, "API_CONFIGURATION_ERROR", "Internal server error", context, params, stage
                )
        else:
            content_type, body = "application/json", result.body
        headers = {"Content-Type": content_type}
        for key, source in chosen.parameters.items():
            if key.startswith("method.response.header."):
                value = mapped_value(source, params, context, stage, result.body, result.headers)
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
        api_key = header(request.headers, "x-api-key")
        if method.api_key_required and api_key:
            plan = stage.usage_plan_method_throttles.get((method.path, method.http_method)) or stage.usage_plan_throttle
            if plan is not None:
                buckets.append(self._bucket(("plan", stage.name, api_key, method.path, method.http_method), plan))
        if all(b.take() for b in reversed(buckets)):  # most specific first: a refusal there spends nothing above
            return True
        with self._lock:
            self.throttled += 1
        return False

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
                "domainName": header(request.headers, "Host") or "",
                "requestTime": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
                "requestTimeEpoch": int(now.timestamp() * 1000),
                "identity": {"sourceIp": request.source_ip, "userAgent": header(request.headers, "User-Agent") or ""},
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
