"""The deploy plan: one entry per CloudFormation resource type -> how it is named, how it is built.

Naming runs for every resource first (so every Ref/GetAtt resolves), then the builders run in
the plan's order (topics and log groups, tables, queues, functions, state machines, event source
mappings, alarms, schedules). Types without a builder (IAM, KMS, policies) are accepted as-is: the
IAM enforcer reads them from the template.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from local_cloud.clients import aws
from local_cloud.composite_alarms import RuleError, validate
from local_cloud.errors import service_error
from local_cloud.event_sources import EventSourceSpec
from local_cloud.interfaces import Deployment
from local_cloud.lambda_runtime import LocalFunction
from local_cloud.template import ACCOUNT, REGION, Resource

BASE = f"{REGION}:{ACCOUNT}"
Namer = Callable[[Deployment, Resource], None]
Builder = Callable[[Deployment, list[Resource]], None]


@dataclass(frozen=True)
class Entry:
    """How one resource type is named (Ref and GetAtt values) and built in moto (``None``: not built)."""

    name: Namer
    build: Builder | None = None


def physical_name(d: Deployment, r: Resource, prop: str, limit: int) -> str:
    """The name property when the template sets one, else ``<stack>-<logicalId>`` (cut to ``limit``)."""
    return str(r.properties.get(prop) or f"{d.stack}-{r.logical_id}")[:limit]


# -- naming -----------------------------------------------------------------------------------------
def name_queue(d: Deployment, r: Resource) -> None:
    lid, name = r.logical_id, physical_name(d, r, "QueueName", 80)
    url, arn = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{name}", f"arn:aws:sqs:{BASE}:{name}"
    d.refs[lid] = url
    d.attrs.update({(lid, "Arn"): arn, (lid, "QueueName"): name, (lid, "QueueUrl"): url})
    d.queues[lid] = {"name": name, "url": url, "arn": arn}
    target = r.properties.get("RedrivePolicy", {}).get("deadLetterTargetArn", {})
    if isinstance(target, dict) and "Fn::GetAtt" in target:
        d.dlq_ids.add(target["Fn::GetAtt"][0])


def name_table(d: Deployment, r: Resource) -> None:
    name = physical_name(d, r, "TableName", 255)
    d.refs[r.logical_id] = name
    d.attrs[(r.logical_id, "Arn")] = f"arn:aws:dynamodb:{BASE}:table/{name}"
    d.tables[r.logical_id] = name


def name_function(d: Deployment, r: Resource) -> None:
    name = physical_name(d, r, "FunctionName", 64)
    d.refs[r.logical_id] = name
    d.attrs[(r.logical_id, "Arn")] = f"arn:aws:lambda:{BASE}:function:{name}"


def name_layer(d: Deployment, r: Resource) -> None:
    d.refs[r.logical_id] = f"arn:aws:lambda:{BASE}:layer:{r.logical_id}:1"


def name_state_machine(d: Deployment, r: Resource) -> None:
    lid, name = r.logical_id, physical_name(d, r, "StateMachineName", 80)
    arn = f"arn:aws:states:{BASE}:stateMachine:{name}"
    d.refs[lid] = arn
    d.attrs.update({(lid, "Arn"): arn, (lid, "Name"): name})
    d.state_machines[lid] = arn


def name_topic(d: Deployment, r: Resource) -> None:
    lid, name = r.logical_id, physical_name(d, r, "TopicName", 256)
    arn = f"arn:aws:sns:{BASE}:{name}"
    d.refs[lid] = arn
    d.attrs.update({(lid, "TopicArn"): arn, (lid, "TopicName"): name})


def name_role(d: Deployment, r: Resource) -> None:
    name = physical_name(d, r, "RoleName", 64)
    d.refs[r.logical_id] = name
    d.attrs[(r.logical_id, "Arn")] = f"arn:aws:iam::{ACCOUNT}:role/{name}"


def name_log_group(d: Deployment, r: Resource) -> None:
    name = physical_name(d, r, "LogGroupName", 512)
    d.refs[r.logical_id] = name
    d.attrs[(r.logical_id, "Arn")] = f"arn:aws:logs:{BASE}:log-group:{name}:*"


def name_alarm(d: Deployment, r: Resource) -> None:
    name = physical_name(d, r, "AlarmName", 255)
    d.refs[r.logical_id] = name
    d.attrs[(r.logical_id, "Arn")] = f"arn:aws:cloudwatch:{BASE}:alarm:{name}"


def name_key(d: Deployment, r: Resource) -> None:
    d.refs[r.logical_id] = f"local-key-{r.logical_id}"
    d.attrs[(r.logical_id, "Arn")] = f"arn:aws:kms:{BASE}:key/local-key-{r.logical_id}"


def name_api_stage(d: Deployment, r: Resource) -> None:
    """Ref is the stage's name (https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-apigateway-stage.html):
    what an ``AWS/ApiGateway`` alarm's ``Stage`` dimension names and the gateway's datapoints carry."""
    d.refs[r.logical_id] = str(r.properties.get("StageName") or f"{d.stack}-{r.logical_id}")


def name_default(d: Deployment, r: Resource) -> None:
    """Any other type: Ref is ``<stack>-<logicalId>``."""
    d.refs[r.logical_id] = f"{d.stack}-{r.logical_id}"


# -- building ---------------------------------------------------------------------------------------
def build_topics(d: Deployment, resources: list[Resource]) -> None:
    for r in resources:
        aws("sns").create_topic(Name=d.attrs[(r.logical_id, "TopicName")])


def build_subscriptions(d: Deployment, resources: list[Resource]) -> None:
    """Topic subscriptions (SQS ones receive what the topic delivers; e-mail ones stay pending)."""
    for r in resources:
        p = d.resolve(r.properties)
        raw = {"RawMessageDelivery": "true"} if p.get("RawMessageDelivery") else {}
        aws("sns").subscribe(
            TopicArn=p["TopicArn"], Protocol=p["Protocol"], Endpoint=str(p["Endpoint"]), Attributes=raw
        )


def build_log_groups(d: Deployment, resources: list[Resource]) -> None:
    for r in resources:
        aws("logs").create_log_group(logGroupName=d.refs[r.logical_id])


def build_tables(d: Deployment, resources: list[Resource]) -> None:
    ddb = aws("dynamodb")
    for r in resources:
        p = d.resolve(r.properties)
        kwargs: dict[str, Any] = {
            "TableName": d.tables[r.logical_id],
            "KeySchema": p["KeySchema"],
            "AttributeDefinitions": p["AttributeDefinitions"],
            "BillingMode": p.get("BillingMode", "PAY_PER_REQUEST"),
        }
        if p.get("GlobalSecondaryIndexes"):
            kwargs["GlobalSecondaryIndexes"] = p["GlobalSecondaryIndexes"]
        ddb.create_table(**kwargs)
        ttl = p.get("TimeToLiveSpecification")
        if ttl and ttl.get("Enabled"):
            ddb.update_time_to_live(
                TableName=kwargs["TableName"],
                TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl["AttributeName"]},
            )


#: Queue properties that are SQS attributes.
QUEUE_ATTRIBUTES = (
    "VisibilityTimeout",
    "MessageRetentionPeriod",
    "DelaySeconds",
    "ReceiveMessageWaitTimeSeconds",
    "RedrivePolicy",
    "SqsManagedSseEnabled",
    "MaximumMessageSize",
)


def build_queues(d: Deployment, resources: list[Resource]) -> None:
    sqs = aws("sqs")
    for r in sorted(resources, key=lambda r: "RedrivePolicy" in r.properties):  # DLQs first
        p = d.resolve(r.properties)
        attributes = {
            k: (json.dumps(v) if isinstance(v, dict) else str(v).lower() if isinstance(v, bool) else str(v))
            for k, v in p.items()
            if k in QUEUE_ATTRIBUTES
        }
        info = d.queues[r.logical_id]
        url = sqs.create_queue(QueueName=info["name"], Attributes=attributes)["QueueUrl"]
        # Same account and name; the host is the endpoint's when boto3 talks to a moto server.
        if url.split("/")[-2:] != info["url"].split("/")[-2:]:
            raise RuntimeError(f"moto queue URL {url} differs from the planned {info['url']}")


def _placeholder_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("README.txt", "code runs in-process from the cdk.out asset directory")
    return buffer.getvalue()


def build_functions(d: Deployment, resources: list[Resource]) -> None:
    lam = aws("lambda")
    role_arn = aws("iam").create_role(
        RoleName="local-lambda-role",
        AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
    )["Role"]["Arn"]
    placeholder = _placeholder_zip()
    for r in resources:
        p = r.properties
        name = d.refs[r.logical_id]
        env = {k: str(v) for k, v in d.resolve(p.get("Environment", {}).get("Variables", {})).items()}
        layer_dirs = [
            d.assembly.asset_dir(d.assembly.resource(layer["Ref"])) / "python"
            for layer in p.get("Layers", [])
            if isinstance(layer, dict) and layer.get("Ref")
        ]
        timeout, memory = float(p.get("Timeout", 3)), int(p.get("MemorySize", 128))
        full_env = {
            **env,
            "AWS_LAMBDA_FUNCTION_NAME": name,
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(memory),
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "POWERTOOLS_TRACE_DISABLED": "true",
        }
        d.functions[name] = LocalFunction(
            logical_id=r.logical_id,
            name=name,
            code_dir=d.assembly.asset_dir(r),
            handler=p["Handler"],
            env=full_env,
            timeout=timeout,
            memory=memory,
            layer_dirs=layer_dirs,
            clock=d.clock,
            capture=d.capture,
        )
        lam.create_function(
            FunctionName=name,
            Runtime=p["Runtime"],  # as in the template (moto validates the name only; the code runs in-process)
            Role=role_arn,
            Handler=p["Handler"],
            Code={"ZipFile": placeholder},
            Timeout=int(timeout),
            MemorySize=memory,
            Environment={"Variables": env},
        )


def build_state_machines(d: Deployment, resources: list[Resource]) -> None:
    for r in resources:
        aws("stepfunctions").create_state_machine(
            name=d.attrs[(r.logical_id, "Name")],
            definition=d.resolve(r.properties["DefinitionString"]),
            roleArn=f"arn:aws:iam::{ACCOUNT}:role/local-states-role",
            type=r.properties.get("StateMachineType", "STANDARD"),
        )


def build_event_sources(d: Deployment, resources: list[Resource]) -> None:
    """SQS mappings become :class:`EventSourceSpec` (the runner's pollers drive them)."""
    by_arn = {q["arn"]: (lid, q) for lid, q in d.queues.items()}
    for r in resources:
        p = d.resolve(r.properties)
        lid, queue = by_arn[p["EventSourceArn"]]
        d.event_sources.append(
            EventSourceSpec(
                queue_url=queue["url"],
                queue_arn=queue["arn"],
                function=d.functions[p["FunctionName"]],
                batch_size=int(p.get("BatchSize", 10)),
                report_batch_item_failures="ReportBatchItemFailures" in p.get("FunctionResponseTypes", []),
                visibility_timeout=int(d.assembly.resource(lid).properties.get("VisibilityTimeout", 30)),
                max_concurrency=(p.get("ScalingConfig") or {}).get("MaximumConcurrency"),
            )
        )


def build_alarms(d: Deployment, resources: list[Resource]) -> None:
    """Alarms in moto (the alarm evaluator sets their state), their definitions kept by name."""
    for r in resources:
        p = d.resolve(r.properties)
        name = d.refs[r.logical_id]
        kwargs: dict[str, Any] = {
            "AlarmName": name,
            "EvaluationPeriods": int(p["EvaluationPeriods"]),
            "Threshold": float(p["Threshold"]),
            "ComparisonOperator": p["ComparisonOperator"],
            "TreatMissingData": p.get("TreatMissingData", "missing"),
            "AlarmActions": p.get("AlarmActions", []),
            "OKActions": p.get("OKActions", []),
            "InsufficientDataActions": p.get("InsufficientDataActions", []),
            "AlarmDescription": p.get("AlarmDescription", ""),
        }
        if p.get("DatapointsToAlarm"):
            kwargs["DatapointsToAlarm"] = int(p["DatapointsToAlarm"])
        if "Metrics" in p:  # metric math: its queries, as CloudFormation passes them
            kwargs["Metrics"] = [_metric_query(q) for q in p["Metrics"]]
            kwargs["Period"] = min(int(q["MetricStat"]["Period"]) for q in p["Metrics"] if "MetricStat" in q)
        else:
            kwargs.update(
                MetricName=p["MetricName"],
                Namespace=p["Namespace"],
                Statistic=p.get("Statistic", "Maximum"),
                Period=int(p["Period"]),
                Dimensions=[{"Name": dim["Name"], "Value": str(dim["Value"])} for dim in p.get("Dimensions", [])],
            )
        aws("cloudwatch").put_metric_alarm(
            **{k: v for k, v in kwargs.items() if k != "Period" or "Metrics" not in kwargs}
        )
        # A new alarm starts in INSUFFICIENT_DATA on AWS (moto starts it in OK, which would make the first
        # evaluation without data a transition, and page an alarm with an INSUFFICIENT_DATA action):
        # https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html#alarm-evaluation
        aws("cloudwatch").set_alarm_state(AlarmName=name, StateValue="INSUFFICIENT_DATA", StateReason="created")
        d.alarms[name] = kwargs


def build_composite_alarms(d: Deployment, resources: list[Resource]) -> None:
    """Composite alarms, checked as PutCompositeAlarm checks them (moto has no such call) and kept by name for
    the evaluator (:mod:`local_cloud.composite_alarms`); a refused one fails the deploy as CloudFormation does."""
    known = set(d.alarms) | {d.refs[r.logical_id] for r in resources}
    for r in resources:
        p, name = d.resolve(r.properties), d.refs[r.logical_id]
        try:
            validate(name, p, known)
        except RuleError as e:
            raise service_error(aws("cloudwatch"), "PutCompositeAlarm", e.code, str(e), 400) from e
        d.composite_alarms[name] = {**p, "AlarmName": name}


def _metric_query(q: dict[str, Any]) -> dict[str, Any]:
    """One ``MetricDataQuery`` of a metric-math alarm, with its values as strings where the API wants them."""
    out: dict[str, Any] = {"Id": q["Id"], "ReturnData": bool(q.get("ReturnData", True))}
    if "Expression" in q:
        out["Expression"] = q["Expression"]
    if "MetricStat" in q:
        m = q["MetricStat"]["Metric"]
        dims = [{"Name": d["Name"], "Value": str(d["Value"])} for d in m.get("Dimensions", [])]
        out["MetricStat"] = {
            "Metric": {"Namespace": m["Namespace"], "MetricName": m["MetricName"], "Dimensions": dims},
            "Period": int(q["MetricStat"]["Period"]),
            "Stat": q["MetricStat"]["Stat"],
        }
    return out


def build_schedules(d: Deployment, resources: list[Resource]) -> None:
    """EventBridge schedule rules targeting functions (the runner fires them on demand)."""
    for r in resources:
        p = d.resolve(r.properties)
        if not p.get("ScheduleExpression") or p.get("State", "ENABLED") != "ENABLED":
            continue
        for target in p.get("Targets", []):
            name = str(target["Arn"]).rsplit(":", 1)[-1]
            if name in d.functions:
                d.schedules.append((p["ScheduleExpression"], d.functions[name]))


#: Resource type -> entry, in build order (a builder may use what an earlier one built).
PLAN: dict[str, Entry] = {
    "AWS::SNS::Topic": Entry(name_topic, build_topics),
    "AWS::Logs::LogGroup": Entry(name_log_group, build_log_groups),
    "AWS::DynamoDB::Table": Entry(name_table, build_tables),
    "AWS::SQS::Queue": Entry(name_queue, build_queues),
    "AWS::Lambda::Function": Entry(name_function, build_functions),
    "AWS::StepFunctions::StateMachine": Entry(name_state_machine, build_state_machines),
    "AWS::Lambda::EventSourceMapping": Entry(name_default, build_event_sources),
    "AWS::CloudWatch::Alarm": Entry(name_alarm, build_alarms),
    "AWS::CloudWatch::CompositeAlarm": Entry(name_alarm, build_composite_alarms),
    "AWS::SNS::Subscription": Entry(name_default, build_subscriptions),
    "AWS::Events::Rule": Entry(name_default, build_schedules),
    "AWS::Lambda::LayerVersion": Entry(name_layer),
    "AWS::IAM::Role": Entry(name_role),
    "AWS::KMS::Key": Entry(name_key),
    "AWS::ApiGateway::Stage": Entry(name_api_stage),
}
DEFAULT_ENTRY = Entry(name_default)

#: Types the local deployment builds; anything else (IAM, KMS, log groups' policies) is accepted as-is.
BUILT_TYPES = tuple(t for t, e in PLAN.items() if e.build is not None)
