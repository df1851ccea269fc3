"""Map an AWS SDK call (service, operation, parameters) to the IAM (action, resource ARN) pairs AWS authorizes.

Per the Service Authorization Reference: DynamoDB transactions are authorized per item (its
table and its own action, ``TransactWriteItems`` has no action of its own); SQS batch operations
are authorized as their single-message action; Lambda ``Invoke`` is ``lambda:InvokeFunction``
on the function (with its qualifier); CloudWatch metrics and X-Ray take no resource (``*``).
A call with no rule here is *unmapped*: the caller checks it against ``*``, which only a grant
on every resource allows, and reports it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlparse

from local_cloud.template import ACCOUNT

Check = tuple[str, str]  # (IAM action, resource ARN)
Rule = Callable[[str, str, Mapping[str, Any]], list[Check]]

#: boto3 service name -> IAM service prefix, where they differ.
PREFIX = {"stepfunctions": "states", "cloudwatch": "cloudwatch", "monitoring": "cloudwatch"}

#: Operations authorized as another action.
ACTION_ALIASES = {
    ("lambda", "Invoke"): "InvokeFunction",
    ("lambda", "InvokeAsync"): "InvokeFunction",
    ("lambda", "InvokeWithResponseStream"): "InvokeFunction",
    ("sqs", "SendMessageBatch"): "SendMessage",
    ("sqs", "DeleteMessageBatch"): "DeleteMessage",
    ("sqs", "ChangeMessageVisibilityBatch"): "ChangeMessageVisibility",
}


def _table_arn(region: str, name: str) -> str:
    return name if name.startswith("arn:") else f"arn:aws:dynamodb:{region}:{ACCOUNT}:table/{name}"


def _dynamodb_table(region: str, op: str, p: Mapping[str, Any]) -> list[Check]:
    arn = _table_arn(region, str(p["TableName"]))
    if p.get("IndexName") and op in ("Query", "Scan"):
        arn = f"{arn}/index/{p['IndexName']}"
    return [(f"dynamodb:{op}", arn)]


#: TransactWriteItems element -> the action IAM checks for it.
_TRANSACT_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}


def _dynamodb_transact_write(region: str, op: str, p: Mapping[str, Any]) -> list[Check]:
    checks = []
    for item in p.get("TransactItems", []):
        for kind, body in item.items():
            checks.append((f"dynamodb:{_TRANSACT_ACTIONS[kind]}", _table_arn(region, str(body["TableName"]))))
    return checks


def _dynamodb_transact_get(region: str, op: str, p: Mapping[str, Any]) -> list[Check]:
    return [("dynamodb:GetItem", _table_arn(region, str(i["Get"]["TableName"]))) for i in p.get("TransactItems", [])]


def _dynamodb_batch(region: str, op: str, p: Mapping[str, Any]) -> list[Check]:
    return [(f"dynamodb:{op}", _table_arn(region, str(t))) for t in p.get("RequestItems", {})]


def queue_arn(url: str, region: str) -> str:
    """``https://sqs.<region>.amazonaws.com/<account>/<name>`` (or a local endpoint's URL) -> the queue ARN."""
    parts = urlparse(url).path.strip("/").split("/")
    account, name = (parts[-2], parts[-1]) if len(parts) >= 2 else (ACCOUNT, parts[-1])
    return f"arn:aws:sqs:{region}:{account}:{name}"


def _sqs(region: str, op: str, p: Mapping[str, Any]) -> list[Check]:
    action = "sqs:" + ACTION_ALIASES.get(("sqs", op), op)
    if "QueueUrl" in p:
        return [(action, queue_arn(str(p["QueueUrl"]), region))]
    if op == "GetQueueUrl":
        account = p.get("QueueOwnerAWSAccountId") or ACCOUNT
        return [(action, f"arn:aws:sqs:{region}:{account}:{p['QueueName']}")]
    if op == "CreateQueue":
        return [(action, f"arn:aws:sqs:{region}:{ACCOUNT}:{p['QueueName']}")]
    return [(action, "*")]  # ListQueues


def function_arn(name: str, region: str, qualifier: str | None = None) -> str:
    """A Lambda FunctionName (name, partial or full ARN, ``name:qualifier``) -> the function ARN IAM sees."""
    if name.startswith("arn:"):
        arn = name
    elif ":" in name and not name.split(":", 1)[0].isdigit():
        base, _, alias = name.partition(":")
        arn = f"arn:aws:lambda:{region}:{ACCOUNT}:function:{base}:{alias}"
    elif ":" in name:  # 123456789012:function:name
        arn = f"arn:aws:lambda:{region}:{name}"
    else:
        arn = f"arn:aws:lambda:{region}:{ACCOUNT}:function:{name}"
    return f"{arn}:{qualifier}" if qualifier else arn


def _lambda(region: str, op: str, p: Mapping[str, Any]) -> list[Check]:
    action = "lambda:" + ACTION_ALIASES.get(("lambda", op), op)
    if "FunctionName" not in p:
        return [(action, "*")]
    return [(action, function_arn(str(p["FunctionName"]), region, p.get("Qualifier")))]


def _states(region: str, op: str, p: Mapping[str, Any]) -> list[Check]:
    action = f"states:{op}"
    for key in ("stateMachineArn", "executionArn", "activityArn", "mapRunArn"):
        if key in p:
            return [(action, str(p[key]))]
    return [(action, "*")]  # SendTask*, List* (no resource types)


def _secret_arn(secret_id: str, region: str) -> str | None:
    """The secret's complete ARN, as IAM evaluates it, however the caller named it (name, partial
    ARN or complete ARN). Read from moto's store directly: a nested API call would itself be checked."""
    try:
        from moto.secretsmanager.models import secretsmanager_backends

        store = secretsmanager_backends[ACCOUNT][region].secrets
        if secret_id in store:
            return str(store[secret_id].arn)
    except Exception:  # moto moved its store: fall back to the name as given
        return None
    return None


def _secrets(region: str, op: str, p: Mapping[str, Any]) -> list[Check]:
    secret = str(p.get("SecretId", "*"))
    if secret != "*":
        resolved = _secret_arn(secret, region)
        if resolved:
            secret = resolved
        elif not secret.startswith("arn:"):
            secret = f"arn:aws:secretsmanager:{region}:{ACCOUNT}:secret:{secret}"
    return [(f"secretsmanager:{op}", secret)]


def _logs(region: str, op: str, p: Mapping[str, Any]) -> list[Check]:
    group = p.get("logGroupName")
    if not group:
        return [(f"logs:{op}", "*")]
    stream = p.get("logStreamName")
    base = f"arn:aws:logs:{region}:{ACCOUNT}:log-group:{group}"
    return [(f"logs:{op}", f"{base}:log-stream:{stream}" if stream else f"{base}:*")]


def _sns(region: str, op: str, p: Mapping[str, Any]) -> list[Check]:
    return [(f"sns:{op}", str(p.get("TopicArn") or p.get("TargetArn") or "*"))]


def _kms(region: str, op: str, p: Mapping[str, Any]) -> list[Check]:
    key = str(p.get("KeyId", "*"))
    if key != "*" and not key.startswith("arn:"):
        key = f"arn:aws:kms:{region}:{ACCOUNT}:{key if key.startswith('alias/') else 'key/' + key}"
    return [(f"kms:{op}", key)]


def _no_resource(prefix: str) -> Rule:
    return lambda region, op, p: [(f"{prefix}:{op}", "*")]


RULES: dict[tuple[str, str | None], Rule] = {
    ("dynamodb", "TransactWriteItems"): _dynamodb_transact_write,
    ("dynamodb", "TransactGetItems"): _dynamodb_transact_get,
    ("dynamodb", "BatchWriteItem"): _dynamodb_batch,
    ("dynamodb", "BatchGetItem"): _dynamodb_batch,
    **{
        ("dynamodb", op): _dynamodb_table
        for op in (
            "GetItem",
            "PutItem",
            "UpdateItem",
            "DeleteItem",
            "Query",
            "Scan",
            "DescribeTable",
            "DescribeTimeToLive",
            "UpdateTimeToLive",
        )
    },
    ("sqs", None): _sqs,
    ("lambda", None): _lambda,
    ("stepfunctions", None): _states,
    ("secretsmanager", "GetSecretValue"): _secrets,
    ("secretsmanager", "DescribeSecret"): _secrets,
    ("logs", None): _logs,
    ("sns", "Publish"): _sns,
    ("kms", None): _kms,
    ("cloudwatch", "PutMetricData"): _no_resource("cloudwatch"),
    ("cloudwatch", "GetMetricData"): _no_resource("cloudwatch"),
    ("xray", None): _no_resource("xray"),
    ("sts", "GetCallerIdentity"): _no_resource("sts"),
}


def checks_for(service: str, operation: str, params: Mapping[str, Any], region: str) -> tuple[list[Check], bool]:
    """The (action, resource) pairs IAM checks for one call, and whether a rule mapped it.

    Unmapped: ``<prefix>:<Operation>`` on ``*`` (allowed only by a grant on every resource).
    """
    rule = RULES.get((service, operation)) or RULES.get((service, None))
    if rule is not None:
        try:
            return rule(region, operation, params), True
        except (KeyError, TypeError, AttributeError):
            pass  # parameters botocore will reject anyway: check conservatively
    prefix = PREFIX.get(service, service)
    return [(f"{prefix}:{ACTION_ALIASES.get((prefix, operation), operation)}", "*")], False
