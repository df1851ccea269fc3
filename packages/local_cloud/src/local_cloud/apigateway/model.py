"""A deployed template's REST API, read from its ``AWS::ApiGateway::*`` resources.

Structure (which resource is whose parent, which model or validator a method names) is read from
the raw ``Ref`` / ``Fn::GetAtt`` of each property; values (integration URIs, role ARNs, mapping
templates, log group ARNs) go through the deployment's own :class:`~local_cloud.template.Resolver`,
the one that resolves every other resource's properties. A REST API defined by an OpenAPI
``Body`` instead of resources is not read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from local_cloud.interfaces import Deployment


@dataclass(frozen=True)
class IntegrationResponse:
    status_code: str
    selection_pattern: str | None
    templates: dict[str, str]
    parameters: dict[str, str]


@dataclass(frozen=True)
class Integration:
    type: str  # AWS | MOCK | HTTP | ... (AWS and MOCK are served)
    http_method: str
    uri: str
    credentials: str | None  # the role ARN API Gateway assumes
    role_logical_id: str | None
    request_parameters: dict[str, str]
    request_templates: dict[str, str]
    passthrough_behavior: str
    responses: list[IntegrationResponse]


@dataclass(frozen=True)
class Validator:
    body: bool
    parameters: bool


@dataclass(frozen=True)
class Method:
    http_method: str
    path: str  # "/orders/{id}"
    authorization_type: str
    api_key_required: bool
    request_parameters: dict[str, bool]  # "method.request.header.Idempotency-Key" -> required
    request_models: dict[str, str]  # content type -> model logical id
    validator: Validator | None
    integration: Integration | None


@dataclass(frozen=True)
class GatewayResponse:
    status_code: str | None
    templates: dict[str, str]
    parameters: dict[str, str]


@dataclass(frozen=True)
class Throttle:
    rate: float  # requests per second (steady state)
    burst: float  # bucket capacity


@dataclass
class Stage:
    name: str
    variables: dict[str, str] = field(default_factory=dict)
    default_throttle: Throttle | None = None
    method_throttles: dict[tuple[str, str], Throttle] = field(default_factory=dict)  # (path, METHOD)
    access_log_group: str | None = None
    access_log_format: str | None = None
    tracing_enabled: bool = False  # TracingEnabled: X-Ray active tracing ($context.xrayTraceId)
    usage_plan_throttle: Throttle | None = None
    usage_plan_method_throttles: dict[tuple[str, str], Throttle] = field(default_factory=dict)


@dataclass
class RestApi:
    logical_id: str
    name: str
    api_id: str
    methods: list[Method]
    models: dict[str, dict[str, Any]]  # model logical id -> JSON schema
    gateway_responses: dict[str, GatewayResponse]  # response type -> customisation
    stages: dict[str, Stage]

    def method(self, path: str, http_method: str) -> Method | None:
        return next(
            (m for m in self.methods if m.path == path and m.http_method in (http_method, "ANY")),
            None,
        )


def _ref(value: Any) -> str | None:
    if isinstance(value, dict):
        if "Ref" in value:
            return str(value["Ref"])
        att = value.get("Fn::GetAtt")
        if att is not None:
            return str(att[0] if isinstance(att, list) else str(att).split(".", 1)[0])
    return None


def _is_root(value: Any) -> bool:
    att = value.get("Fn::GetAtt") if isinstance(value, dict) else None
    return att is not None and (att[1] if isinstance(att, list) else str(att).split(".", 1)[1]) == "RootResourceId"


def _strings(deployment: Deployment, value: Mapping[str, Any] | None) -> dict[str, str]:
    return {str(k): str(deployment.resolve(v)) for k, v in (value or {}).items()}


def _throttle(rate: Any, burst: Any) -> Throttle | None:
    if rate is None and burst is None:
        return None
    return Throttle(float(rate if rate is not None else 10000), float(burst if burst is not None else 5000))


def _settings_path(resource_path: str) -> str:
    """MethodSettings' ``ResourcePath`` escapes ``/`` as ``~1`` (``/~1orders~1{id}``)."""
    if resource_path == "/*":
        return resource_path
    return resource_path[1:].replace("~1", "/") if resource_path.startswith("/~1") else resource_path


def _log_group(arn: str) -> str:
    """``arn:aws:logs:<region>:<account>:log-group:<name>[:*]`` -> ``<name>``."""
    name = arn.split(":log-group:", 1)[-1]
    return name[:-2] if name.endswith(":*") else name


def rest_apis(deployment: Deployment) -> list[RestApi]:
    """Every ``AWS::ApiGateway::RestApi`` of the deployed template, with its methods and stages."""
    assembly = deployment.assembly
    resources = {r.logical_id: r for r in assembly.resources()}
    return [_rest_api(deployment, api, resources) for api in assembly.resources("AWS::ApiGateway::RestApi")]


def _rest_api(deployment: Deployment, api: Any, resources: Mapping[str, Any]) -> RestApi:
    """One REST API of the template: its methods (by path), models, gateway responses and stages."""

    def mine(type_: str) -> list[Any]:
        return [
            r for r in resources.values() if r.type == type_ and _ref(r.properties.get("RestApiId")) == api.logical_id
        ]

    paths: dict[str, str] = {}

    def path_of(resource_lid: str) -> str:
        if resource_lid not in paths:
            props = resources[resource_lid].properties
            parent = props.get("ParentId")
            base = "" if _is_root(parent) else path_of(str(_ref(parent)))
            paths[resource_lid] = f"{base}/{props['PathPart']}"
        return paths[resource_lid]

    validators = {
        v.logical_id: Validator(
            bool(v.properties.get("ValidateRequestBody")), bool(v.properties.get("ValidateRequestParameters"))
        )
        for v in mine("AWS::ApiGateway::RequestValidator")
    }
    methods = [_method(deployment, m.properties, validators, path_of) for m in mine("AWS::ApiGateway::Method")]
    models = _models(deployment, mine("AWS::ApiGateway::Model"))
    gateway_responses = {
        str(g.properties["ResponseType"]): GatewayResponse(
            str(g.properties["StatusCode"]) if g.properties.get("StatusCode") else None,
            _strings(deployment, g.properties.get("ResponseTemplates")),
            _strings(deployment, g.properties.get("ResponseParameters")),
        )
        for g in mine("AWS::ApiGateway::GatewayResponse")
    }
    stages = _stages(deployment, mine("AWS::ApiGateway::Stage"), mine("AWS::ApiGateway::Deployment"))
    _usage_plans(deployment, api.logical_id, stages)
    return RestApi(
        logical_id=api.logical_id,
        name=str(api.properties.get("Name", api.logical_id)),
        api_id=deployment.refs.get(api.logical_id, api.logical_id),
        methods=methods,
        models=models,
        gateway_responses=gateway_responses,
        stages=stages,
    )


def _method(deployment: Deployment, p: Mapping[str, Any], validators: Mapping[str, Validator], path_of: Any) -> Method:
    """An ``AWS::ApiGateway::Method``'s properties as the data plane reads them."""
    resource = p.get("ResourceId")
    path = "/" if _is_root(resource) else path_of(str(_ref(resource)))
    return Method(
        http_method=str(p["HttpMethod"]).upper(),
        path=path,
        authorization_type=str(p.get("AuthorizationType", "NONE")),
        api_key_required=bool(p.get("ApiKeyRequired", False)),
        request_parameters={str(k): bool(v) for k, v in (p.get("RequestParameters") or {}).items()},
        request_models={str(k): str(_ref(v) or v) for k, v in (p.get("RequestModels") or {}).items()},
        validator=validators.get(str(_ref(p.get("RequestValidatorId")))),
        integration=_integration(deployment, p.get("Integration")),
    )


def _models(deployment: Deployment, resources: list[Any]) -> dict[str, dict[str, Any]]:
    """The API's model schemas by logical ID, and by name (RequestModels may name a model instead of Ref-ing it)."""
    models: dict[str, dict[str, Any]] = {}
    names = {}
    for model in resources:
        schema = deployment.resolve(model.properties.get("Schema", {}))
        models[model.logical_id] = schema if isinstance(schema, dict) else {}
        if model.properties.get("Name"):
            names[str(model.properties["Name"])] = model.logical_id
    for name, lid in names.items():
        models.setdefault(name, models[lid])
    return models


def _integration(deployment: Deployment, raw: Mapping[str, Any] | None) -> Integration | None:
    if not raw:
        return None
    credentials = raw.get("Credentials")
    role_lid = _ref(credentials)
    responses = [
        IntegrationResponse(
            status_code=str(r.get("StatusCode", "200")),
            selection_pattern=(str(r["SelectionPattern"]) if r.get("SelectionPattern") else None),
            templates=_strings(deployment, r.get("ResponseTemplates")),
            parameters=_strings(deployment, r.get("ResponseParameters")),
        )
        for r in raw.get("IntegrationResponses", [])
    ]
    return Integration(
        type=str(raw.get("Type", "MOCK")),
        http_method=str(raw.get("IntegrationHttpMethod", "POST")),
        uri=str(deployment.resolve(raw.get("Uri", ""))),
        credentials=str(deployment.resolve(credentials)) if credentials else None,
        role_logical_id=role_lid,
        request_parameters=_strings(deployment, raw.get("RequestParameters")),
        request_templates=_strings(deployment, raw.get("RequestTemplates")),
        passthrough_behavior=str(raw.get("PassthroughBehavior", "WHEN_NO_MATCH")),
        responses=responses,
    )


def _stages(deployment: Deployment, stage_resources: list[Any], deployments: list[Any]) -> dict[str, Stage]:
    stages: dict[str, Stage] = {}
    for r in stage_resources:
        p = r.properties
        stage = Stage(name=str(p["StageName"]), variables=_strings(deployment, p.get("Variables")))
        stage.tracing_enabled = str(p.get("TracingEnabled", "false")).lower() == "true"
        for setting in p.get("MethodSettings", []):
            throttle = _throttle(setting.get("ThrottlingRateLimit"), setting.get("ThrottlingBurstLimit"))
            if throttle is None:
                continue
            path, method = _settings_path(str(setting.get("ResourcePath", "/*"))), str(setting.get("HttpMethod", "*"))
            if (path, method) == ("/*", "*"):
                stage.default_throttle = throttle
            else:
                stage.method_throttles[(path, method.upper())] = throttle
        log = p.get("AccessLogSetting") or {}
        if log.get("DestinationArn"):
            stage.access_log_group = _log_group(str(deployment.resolve(log["DestinationArn"])))
            stage.access_log_format = str(deployment.resolve(log.get("Format", "$context.requestId")))
        stages[stage.name] = stage
    for d in deployments:  # a Deployment with StageName creates that stage (no settings)
        name = d.properties.get("StageName")
        if name and name not in stages:
            stages[str(name)] = Stage(name=str(name))
    return stages


def _usage_plans(deployment: Deployment, api_lid: str, stages: dict[str, Stage]) -> None:
    stage_names = {
        r.logical_id: str(r.properties.get("StageName"))
        for r in deployment.assembly.resources("AWS::ApiGateway::Stage")
    }
    for plan in deployment.assembly.resources("AWS::ApiGateway::UsagePlan"):
        throttle = plan.properties.get("Throttle") or {}
        for api_stage in plan.properties.get("ApiStages", []):
            if _ref(api_stage.get("ApiId")) != api_lid:
                continue
            stage_ref = api_stage.get("Stage")
            name = stage_names.get(str(_ref(stage_ref)), str(stage_ref))
            stage = stages.get(name)
            if stage is None:
                continue
            stage.usage_plan_throttle = _throttle(throttle.get("RateLimit"), throttle.get("BurstLimit"))
            for key, t in (api_stage.get("Throttle") or {}).items():  # "/orders/POST"
                path, _, method = str(key).rpartition("/")
                limit = _throttle(t.get("RateLimit"), t.get("BurstLimit"))
                if limit is not None:
                    stage.usage_plan_method_throttles[(path or "/", method.upper())] = limit
