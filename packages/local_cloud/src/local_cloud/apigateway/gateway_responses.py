"""API Gateway's own errors, as gateway responses: the template's ``AWS::ApiGateway::GatewayResponse`` for the
type (or its ``DEFAULT_4XX`` / ``DEFAULT_5XX``), else AWS's default ``{"message":$context.error.messageString}``
with the type's status
(https://docs.aws.amazon.com/apigateway/latest/developerguide/supported-gateway-response-types.html).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from local_cloud.apigateway.http import Response
from local_cloud.apigateway.mapping import mapped_value
from local_cloud.apigateway.model import RestApi, Stage
from local_cloud.apigateway.vtl import substitute_with

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


def gateway_response(
    api: RestApi,
    response_type: str,
    message: str,
    context: dict[str, Any],
    params: Mapping[str, Mapping[str, str]],
    stage: Stage | None = None,
) -> Response:
    """The response of API Gateway's own error of this type: the API's customisation of the type (or its
    ``DEFAULT_4XX`` / ``DEFAULT_5XX``), else AWS's default body with the type's status; ``context.error``
    set to the message."""
    status, error_type = RESPONSE_TYPES.get(response_type, (403, "ForbiddenException"))
    custom = api.gateway_responses.get(response_type)
    if custom is not None and custom.status_code:
        status = int(custom.status_code)
    if custom is None:
        custom = api.gateway_responses.get("DEFAULT_5XX" if status >= 500 else "DEFAULT_4XX")
    context["error"].update(message=message, messageString=json.dumps(message), responseType=response_type)
    variables = stage.variables if stage else {}
    templates = custom.templates if custom is not None and custom.templates else {}
    content_type = "application/json" if "application/json" in templates or not templates else next(iter(templates))
    body = substitute_with(templates.get(content_type, DEFAULT_GATEWAY_TEMPLATE), context, variables, missing="")
    headers = {"Content-Type": content_type, "x-amzn-ErrorType": error_type}
    for key, source in (custom.parameters if custom is not None else {}).items():
        if key.startswith("gatewayresponse.header."):
            value = mapped_value(source, params, context, stage or _NO_STAGE, "")
            if value is not None:
                headers[key[len("gatewayresponse.header.") :]] = value
    return Response(status, headers, body.encode())


_NO_STAGE = Stage(name="")
