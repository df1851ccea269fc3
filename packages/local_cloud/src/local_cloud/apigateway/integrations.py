"""``AWS`` integrations, called as the integration's role: SQS (``path/``) and DynamoDB (``action/``).

The integration request as API Gateway sends it: the rendered body, the headers mapped by the
integration's request parameters. SQS gets the query protocol's form body
(``Action=SendMessage&MessageBody=...&MessageAttribute.1.Name=...``) on the path-style URI
``arn:aws:apigateway:{region}:sqs:path/{account}/{queue}``; DynamoDB gets its JSON request on
``arn:aws:apigateway:{region}:dynamodb:action/{Operation}``
(https://docs.aws.amazon.com/apigateway/latest/api/API_Integration.html, ``uri``).

Authorization: API Gateway assumes the integration's ``Credentials`` role, so the call is allowed
only if that role's identity policies in the template allow it. The policies are evaluated by
:mod:`local_cloud.iam` with the (action, resource) pairs of :mod:`local_cloud.iam_calls`, exactly as
for the template's functions (:mod:`local_cloud.iam_enforce`); a refusal is the service's own
access-denied answer. While IAM enforcement is on, the role's calls, denials and unused grants are
recorded in the IAM report as principal ``apigateway:<role name>``. The call itself goes to the
local SQS / DynamoDB through boto3, so the run's limit enforcement (a message over the queue's ``MaximumMessageSize``,
:mod:`local_cloud.limits_enforce`) and moto's own checks answer as AWS does.

Answers are JSON, as when the integration request sends ``Accept: application/json``: SQS
``{"SendMessageResponse": {"SendMessageResult": {...}, "ResponseMetadata": {...}}}`` or
``{"Error": {"Code", "Message", "Type"}, "RequestId"}``; DynamoDB its own JSON (``{}`` from a
GetItem that finds nothing).
"""

from __future__ import annotations

import base64
import json
import re
import urllib.parse
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import botocore.exceptions
from botocore import xform_name

from local_cloud.apigateway.model import Integration
from local_cloud.clients import aws
from local_cloud.iam import Decision, Policy
from local_cloud.iam_calls import checks_for
from local_cloud.iam_enforce import IamEnforcer
from local_cloud.iam_principals import role_policies
from local_cloud.interfaces import Deployment
from local_cloud.template import ACCOUNT, REGION

_URI = re.compile(r"arn:aws:apigateway:(?P<region>[^:]+):(?P<service>[^:]+):(?P<kind>path|action)/(?P<rest>.+)")
_ATTRIBUTE = re.compile(r"MessageAttribute\.(\d+)\.(Name|Value\.DataType|Value\.StringValue|Value\.BinaryValue)")
#: The session name API Gateway's assumed-role sessions carry in AWS's access-denied messages.
SESSION = "BackplaneAssumeRoleSession"


@dataclass
class IntegrationResult:
    """The integration's response: HTTP status, headers, body."""

    status: int
    body: str
    headers: dict[str, str] = field(default_factory=dict)


class IntegrationError(Exception):
    """The integration cannot be made (unsupported service or URI): API Gateway's 500."""


def sqs_send_message_params(form: str) -> dict[str, Any]:
    """A form-encoded SQS query body -> SendMessage's parameters (``Action`` left out)."""
    fields = dict(urllib.parse.parse_qsl(form, keep_blank_values=True))
    params: dict[str, Any] = {}
    attributes: dict[str, dict[str, str]] = {}
    for key, value in fields.items():
        match = _ATTRIBUTE.fullmatch(key)
        if match:
            attributes.setdefault(match.group(1), {})[match.group(2)] = value
        elif key in ("MessageBody", "MessageGroupId", "MessageDeduplicationId"):
            params[key] = value
        elif key == "DelaySeconds":
            params[key] = int(value)
    message_attributes: dict[str, dict[str, Any]] = {}
    for _, attr in sorted(attributes.items(), key=lambda kv: int(kv[0])):
        typed: dict[str, Any] = {"DataType": attr.get("Value.DataType", "String")}
        if "Value.BinaryValue" in attr:
            typed["BinaryValue"] = base64.b64decode(attr["Value.BinaryValue"])
        else:
            typed["StringValue"] = attr.get("Value.StringValue", "")
        message_attributes[attr.get("Name", "")] = typed
    if message_attributes:
        params["MessageAttributes"] = message_attributes
    params["_Action"] = fields.get("Action", "")
    return params


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode()
    return str(value)


class AwsIntegrations:
    """Makes a REST API's ``AWS`` integration calls as their roles."""

    def __init__(self, deployment: Deployment) -> None:
        self.deployment = deployment
        self.policies = role_policies(deployment)
        self.role_ids = {v: k for k, v in deployment.refs.items()}  # role name -> logical id
        self.queue_urls = {q["name"]: q["url"] for q in deployment.queues.values()}
        #: (role logical id, action, resource) -> refusals, for the report.
        self.denied: dict[tuple[str, str, str], int] = {}

    def call(self, integration: Integration, body: str, headers: Mapping[str, str]) -> IntegrationResult:
        match = _URI.fullmatch(integration.uri)
        if match is None:
            raise IntegrationError(f"unsupported integration URI {integration.uri!r}")
        service, kind, rest = match["service"], match["kind"], match["rest"]
        if service == "sqs" and kind == "path":
            return self._sqs(integration, rest, body)
        if service == "dynamodb" and kind == "action":
            return self._dynamodb(integration, rest, body)
        raise IntegrationError(f"integration for {service} {kind}/ is not served locally")

    # -- authorization ---------------------------------------------------------------------------
    def _role(self, integration: Integration) -> tuple[str, str]:
        """(logical id, role name) of the integration's role."""
        arn = integration.credentials or ""
        name = arn.rsplit("/", 1)[-1]
        lid = integration.role_logical_id or self.role_ids.get(name, name)
        return lid, name

    def _denied(self, integration: Integration, service: str, operation: str, params: Mapping[str, Any]) -> str | None:
        """The access-denied message if the role does not allow the call, else None."""
        lid, name = self._role(integration)
        policy = self.policies.get(lid, Policy())
        checks, _ = checks_for(service, operation, params, REGION)
        enforcer = self.deployment.iam
        if isinstance(enforcer, IamEnforcer):  # IAM enforcement is on: the role's use goes in its report
            first = enforcer.record(enforcer.integration_principal(lid, name, policy), checks, platform=False)
            decisions = [first] if first is not None else []
        else:
            decisions = [(check, policy.evaluate(*check)) for check in checks]
        for (action, resource), decision in decisions:
            if decision is Decision.ALLOW:
                continue
            key = (lid, action, resource)
            self.denied[key] = self.denied.get(key, 0) + 1
            why = (
                "with an explicit deny in an identity-based policy"
                if decision is Decision.EXPLICIT_DENY
                else f"because no identity-based policy allows the {action} action"
            )
            return (
                f"User: arn:aws:sts::{ACCOUNT}:assumed-role/{name}/{SESSION} is not authorized to perform: "
                f"{action} on resource: {resource} {why}"
            )
        return None

    # -- SQS ---------------------------------------------------------------------------------------
    @staticmethod
    def _sqs_error(status: int, code: str, message: str) -> IntegrationResult:
        body = {"Error": {"Code": code, "Message": message, "Type": "Sender"}, "RequestId": str(uuid.uuid4())}
        return IntegrationResult(status, json.dumps(body), {"Content-Type": "application/json"})

    def _sqs(self, integration: Integration, path: str, body: str) -> IntegrationResult:
        account, _, queue = path.partition("/")
        url = self.queue_urls.get(queue, f"https://sqs.{REGION}.amazonaws.com/{account}/{queue}")
        params = sqs_send_message_params(body)
        action = params.pop("_Action")
        if action != "SendMessage":
            return self._sqs_error(
                400, "InvalidAction", f"The action {action or '(none)'} is not valid for this endpoint."
            )
        denied = self._denied(integration, "sqs", "SendMessage", {"QueueUrl": url})
        if denied:
            return self._sqs_error(403, "AccessDenied", denied)
        try:
            sent = aws("sqs").send_message(QueueUrl=url, **params)
        except botocore.exceptions.ClientError as exc:
            error = exc.response.get("Error", {})
            status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 400))
            return self._sqs_error(status, str(error.get("Code", "")), str(error.get("Message", "")))
        result = {k: sent[k] for k in ("MessageId", "MD5OfMessageBody", "MD5OfMessageAttributes") if k in sent}
        answer = {
            "SendMessageResponse": {
                "SendMessageResult": result,
                "ResponseMetadata": {"RequestId": sent.get("ResponseMetadata", {}).get("RequestId", str(uuid.uuid4()))},
            }
        }
        return IntegrationResult(200, json.dumps(answer), {"Content-Type": "application/json"})

    # -- DynamoDB ---------------------------------------------------------------------------------
    def _dynamodb(self, integration: Integration, operation: str, body: str) -> IntegrationResult:
        try:
            params = json.loads(body) if body.strip() else {}
        except ValueError:
            return self._dynamodb_error(
                400, "SerializationException", "Start of structure or map found where not expected."
            )
        denied = self._denied(integration, "dynamodb", operation, params)
        if denied:
            return self._dynamodb_error(400, "AccessDeniedException", denied)
        client = aws("dynamodb")
        try:
            answer = getattr(client, xform_name(operation))(**params)
        except (botocore.exceptions.ParamValidationError, TypeError) as exc:
            return self._dynamodb_error(400, "ValidationException", str(exc))
        except botocore.exceptions.ClientError as exc:
            error = exc.response.get("Error", {})
            status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 400))
            return self._dynamodb_error(status, str(error.get("Code", "")), str(error.get("Message", "")))
        answer.pop("ResponseMetadata", None)
        return IntegrationResult(
            200, json.dumps(answer, default=_json_default), {"Content-Type": "application/x-amz-json-1.0"}
        )

    @staticmethod
    def _dynamodb_error(status: int, code: str, message: str) -> IntegrationResult:
        body = {"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": message}
        return IntegrationResult(status, json.dumps(body), {"Content-Type": "application/x-amz-json-1.0"})
