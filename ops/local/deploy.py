"""Build the template's resources in moto, and route Lambda invocations to in-process handlers."""

from __future__ import annotations

import io
import json
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest import mock

import boto3

from ops.local.capture import LineCapture, point_powertools_loggers_at
from ops.local.clock import SimClock
from ops.local.lambda_runtime import CRASH_ERROR_TYPE, FakeLambdaContext, ensure_on_path, invoke_json, load_handler
from ops.local.template import ACCOUNT, REGION, CloudAssembly, Resolver, Resource

if TYPE_CHECKING:
    from ops.local.iam_enforce import IamEnforcer

#: Types the local deployment builds; anything else (IAM, KMS, log groups, policies) is accepted as-is.
BUILT_TYPES = (
    "AWS::SNS::Topic",
    "AWS::DynamoDB::Table",
    "AWS::SQS::Queue",
    "AWS::Lambda::Function",
    "AWS::StepFunctions::StateMachine",
    "AWS::Lambda::EventSourceMapping",
    "AWS::CloudWatch::Alarm",
)


@dataclass
class LocalFunction:
    """A template function, run in-process from its own asset directory."""

    logical_id: str
    name: str
    code_dir: Path
    handler: str
    env: dict[str, str]
    timeout: float
    memory: int
    layer_dirs: list[Path]
    clock: SimClock
    capture: LineCapture | None = None
    invocations: int = 0
    errors: int = 0
    _fn: Any = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _load(self) -> Any:
        with self._lock:
            if self._fn is None:
                ensure_on_path(*self.layer_dirs)
                self._fn = load_handler(self.code_dir, self.handler, self.env)
                if self.capture is not None:
                    point_powertools_loggers_at(self.capture)
            return self._fn

    def invoke(self, event: Any) -> tuple[str, bool]:
        fn = self._load()
        context = FakeLambdaContext(
            function_name=self.name, memory_limit_in_mb=self.memory, timeout_seconds=self.timeout, clock=self.clock.now
        )
        with self._lock:
            self.invocations += 1
        result, errored = invoke_json(fn, event, context)
        if errored and CRASH_ERROR_TYPE in result:
            # A crash is a timeout: the invocation's remaining time passes before anyone notices.
            self.clock.advance(context.get_remaining_time_in_millis() / 1000)
        if errored:
            with self._lock:
                self.errors += 1
        return result, errored


@dataclass
class EventSourceSpec:
    queue_url: str
    queue_arn: str
    function: LocalFunction
    batch_size: int
    report_batch_item_failures: bool
    visibility_timeout: int
    max_concurrency: int | None


class LocalDeployment:
    """The template's queues, tables, functions, state machine and alarms, in moto.

    Physical names are ``<stack>-<logicalId>``; every Ref/GetAtt in environment variables, the
    state machine definition, redrive policies and alarm dimensions resolves to them.
    """

    def __init__(self, assembly: CloudAssembly, clock: SimClock, capture: LineCapture | None = None) -> None:
        self.assembly = assembly
        self.clock = clock
        self.capture = capture
        self.stack = assembly.stack_name
        self.refs: dict[str, str] = {}
        self.attrs: dict[tuple[str, str], str] = {}
        self.functions: dict[str, LocalFunction] = {}  # by physical name
        self.queues: dict[str, dict[str, str]] = {}  # logical id -> {name, url, arn}
        self.dlq_ids: set[str] = set()
        self.tables: dict[str, str] = {}  # logical id -> name
        self.state_machines: dict[str, str] = {}  # logical id -> arn
        self.alarms: dict[str, dict[str, Any]] = {}  # name -> put_metric_alarm kwargs
        self.event_sources: list[EventSourceSpec] = []
        self.schedules: list[tuple[str, LocalFunction]] = []  # (schedule expression, target)
        self.iam: IamEnforcer | None = None  # set while ops.local.iam_enforce.enforce_iam is active
        self._plan()
        self.resolve = Resolver(self.stack, self.refs, self.attrs)

    # -- naming ---------------------------------------------------------------------------
    def _name(self, resource: Resource, prop: str, limit: int) -> str:
        return str(resource.properties.get(prop) or f"{self.stack}-{resource.logical_id}")[:limit]

    def _plan(self) -> None:
        base = f"{REGION}:{ACCOUNT}"
        for r in self.assembly.resources():
            lid = r.logical_id
            if r.type == "AWS::SQS::Queue":
                name = self._name(r, "QueueName", 80)
                url = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{name}"
                arn = f"arn:aws:sqs:{base}:{name}"
                self.refs[lid] = url
                self.attrs.update({(lid, "Arn"): arn, (lid, "QueueName"): name, (lid, "QueueUrl"): url})
                self.queues[lid] = {"name": name, "url": url, "arn": arn}
            elif r.type == "AWS::DynamoDB::Table":
                name = self._name(r, "TableName", 255)
                self.refs[lid] = name
                self.attrs[(lid, "Arn")] = f"arn:aws:dynamodb:{base}:table/{name}"
                self.tables[lid] = name
            elif r.type == "AWS::Lambda::Function":
                name = self._name(r, "FunctionName", 64)
                self.refs[lid] = name
                self.attrs[(lid, "Arn")] = f"arn:aws:lambda:{base}:function:{name}"
            elif r.type == "AWS::Lambda::LayerVersion":
                self.refs[lid] = f"arn:aws:lambda:{base}:layer:{lid}:1"
            elif r.type == "AWS::StepFunctions::StateMachine":
                name = self._name(r, "StateMachineName", 80)
                arn = f"arn:aws:states:{base}:stateMachine:{name}"
                self.refs[lid] = arn
                self.attrs.update({(lid, "Arn"): arn, (lid, "Name"): name})
                self.state_machines[lid] = arn
            elif r.type == "AWS::SNS::Topic":
                name = self._name(r, "TopicName", 256)
                arn = f"arn:aws:sns:{base}:{name}"
                self.refs[lid] = arn
                self.attrs.update({(lid, "TopicArn"): arn, (lid, "TopicName"): name})
            elif r.type == "AWS::IAM::Role":
                name = self._name(r, "RoleName", 64)
                self.refs[lid] = name
                self.attrs[(lid, "Arn")] = f"arn:aws:iam::{ACCOUNT}:role/{name}"
            elif r.type == "AWS::Logs::LogGroup":
                name = self._name(r, "LogGroupName", 512)
                self.refs[lid] = name
                self.attrs[(lid, "Arn")] = f"arn:aws:logs:{base}:log-group:{name}:*"
            elif r.type == "AWS::CloudWatch::Alarm":
                name = self._name(r, "AlarmName", 255)
                self.refs[lid] = name
                self.attrs[(lid, "Arn")] = f"arn:aws:cloudwatch:{base}:alarm:{name}"
            elif r.type == "AWS::KMS::Key":
                self.refs[lid] = f"local-key-{lid}"
                self.attrs[(lid, "Arn")] = f"arn:aws:kms:{base}:key/local-key-{lid}"
            else:
                self.refs[lid] = f"{self.stack}-{lid}"
            if r.type == "AWS::SQS::Queue" and "RedrivePolicy" in r.properties:
                target = r.properties["RedrivePolicy"].get("deadLetterTargetArn", {})
                if isinstance(target, dict) and "Fn::GetAtt" in target:
                    self.dlq_ids.add(target["Fn::GetAtt"][0])

    # -- building -------------------------------------------------------------------------
    def deploy(self) -> LocalDeployment:
        """Create everything in moto (call inside ``mock_aws``)."""
        self._topics()
        self._log_groups()
        self._tables()
        self._queues()
        self._functions()
        self._state_machines()
        self._event_sources()
        self._alarms()
        self._schedules()
        return self

    def _schedules(self) -> None:
        """EventBridge schedule rules targeting functions (the runner fires them on demand)."""
        for r in self.assembly.resources("AWS::Events::Rule"):
            p = self.resolve(r.properties)
            if not p.get("ScheduleExpression") or p.get("State", "ENABLED") != "ENABLED":
                continue
            for target in p.get("Targets", []):
                name = str(target["Arn"]).rsplit(":", 1)[-1]
                if name in self.functions:
                    self.schedules.append((p["ScheduleExpression"], self.functions[name]))

    def outputs(self) -> dict[str, str]:
        """The template's Outputs, resolved against the local resources (as CloudFormation would)."""
        return {k: str(self.resolve(v["Value"])) for k, v in self.assembly.template.get("Outputs", {}).items()}

    def _topics(self) -> None:
        sns = boto3.client("sns", region_name=REGION)
        for r in self.assembly.resources("AWS::SNS::Topic"):
            sns.create_topic(Name=self.attrs[(r.logical_id, "TopicName")])

    def _log_groups(self) -> None:
        logs = boto3.client("logs", region_name=REGION)
        for r in self.assembly.resources("AWS::Logs::LogGroup"):
            logs.create_log_group(logGroupName=self.refs[r.logical_id])

    def log_group_of(self, function: LocalFunction) -> str | None:
        """The function's log group name (its LoggingConfig), as deployed."""
        config = self.assembly.resource(function.logical_id).properties.get("LoggingConfig", {})
        group = config.get("LogGroup")
        return str(self.resolve(group)) if group else None

    def _tables(self) -> None:
        ddb = boto3.client("dynamodb", region_name=REGION)
        for r in self.assembly.resources("AWS::DynamoDB::Table"):
            p = self.resolve(r.properties)
            kwargs: dict[str, Any] = {
                "TableName": self.tables[r.logical_id],
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

    def _queues(self) -> None:
        sqs = boto3.client("sqs", region_name=REGION)
        ordered = sorted(self.assembly.resources("AWS::SQS::Queue"), key=lambda r: "RedrivePolicy" in r.properties)
        for r in ordered:
            p = self.resolve(r.properties)
            attributes = {
                k: (json.dumps(v) if isinstance(v, dict) else str(v).lower() if isinstance(v, bool) else str(v))
                for k, v in p.items()
                if k
                in (
                    "VisibilityTimeout",
                    "MessageRetentionPeriod",
                    "DelaySeconds",
                    "ReceiveMessageWaitTimeSeconds",
                    "RedrivePolicy",
                    "SqsManagedSseEnabled",
                    "MaximumMessageSize",
                )
            }
            info = self.queues[r.logical_id]
            url = sqs.create_queue(QueueName=info["name"], Attributes=attributes)["QueueUrl"]
            # Same account and name; the host is the endpoint's when boto3 talks to a moto server.
            if url.split("/")[-2:] != info["url"].split("/")[-2:]:
                raise RuntimeError(f"moto queue URL {url} differs from the planned {info['url']}")

    def _functions(self) -> None:
        lam = boto3.client("lambda", region_name=REGION)
        iam = boto3.client("iam", region_name="us-east-1")
        role_arn = iam.create_role(
            RoleName="local-lambda-role",
            AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
        )["Role"]["Arn"]
        placeholder = io.BytesIO()
        with zipfile.ZipFile(placeholder, "w") as zf:
            zf.writestr("README.txt", "code runs in-process from the cdk.out asset directory")
        for r in self.assembly.resources("AWS::Lambda::Function"):
            p = r.properties
            name = self.refs[r.logical_id]
            env = {k: str(v) for k, v in self.resolve(p.get("Environment", {}).get("Variables", {})).items()}
            layer_dirs = []
            for layer in p.get("Layers", []):
                layer_id = layer.get("Ref") if isinstance(layer, dict) else None
                if layer_id:
                    layer_dirs.append(self.assembly.asset_dir(self.assembly.resource(layer_id)) / "python")
            timeout = float(p.get("Timeout", 3))
            memory = int(p.get("MemorySize", 128))
            full_env = {
                **env,
                "AWS_LAMBDA_FUNCTION_NAME": name,
                "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(memory),
                "AWS_REGION": REGION,
                "AWS_DEFAULT_REGION": REGION,
                "POWERTOOLS_TRACE_DISABLED": "true",
            }
            self.functions[name] = LocalFunction(
                logical_id=r.logical_id,
                name=name,
                code_dir=self.assembly.asset_dir(r),
                handler=p["Handler"],
                env=full_env,
                timeout=timeout,
                memory=memory,
                layer_dirs=layer_dirs,
                clock=self.clock,
                capture=self.capture,
            )
            lam.create_function(
                FunctionName=name,
                Runtime="python3.12",  # moto validates the name only; the code runs in-process
                Role=role_arn,
                Handler=p["Handler"],
                Code={"ZipFile": placeholder.getvalue()},
                Timeout=int(timeout),
                MemorySize=memory,
                Environment={"Variables": env},
            )

    def _state_machines(self) -> None:
        sfn = boto3.client("stepfunctions", region_name=REGION)
        for r in self.assembly.resources("AWS::StepFunctions::StateMachine"):
            definition = self.resolve(r.properties["DefinitionString"])
            sfn.create_state_machine(
                name=self.attrs[(r.logical_id, "Name")],
                definition=definition,
                roleArn=f"arn:aws:iam::{ACCOUNT}:role/local-states-role",
                type=r.properties.get("StateMachineType", "STANDARD"),
            )

    def _event_sources(self) -> None:
        by_arn = {q["arn"]: (lid, q) for lid, q in self.queues.items()}
        for r in self.assembly.resources("AWS::Lambda::EventSourceMapping"):
            p = self.resolve(r.properties)
            lid, queue = by_arn[p["EventSourceArn"]]
            function = self.functions[p["FunctionName"]]
            visibility = int(self.assembly.resource(lid).properties.get("VisibilityTimeout", 30))
            self.event_sources.append(
                EventSourceSpec(
                    queue_url=queue["url"],
                    queue_arn=queue["arn"],
                    function=function,
                    batch_size=int(p.get("BatchSize", 10)),
                    report_batch_item_failures="ReportBatchItemFailures" in p.get("FunctionResponseTypes", []),
                    visibility_timeout=visibility,
                    max_concurrency=(p.get("ScalingConfig") or {}).get("MaximumConcurrency"),
                )
            )

    def _alarms(self) -> None:
        cloudwatch = boto3.client("cloudwatch", region_name=REGION)
        for r in self.assembly.resources("AWS::CloudWatch::Alarm"):
            p = self.resolve(r.properties)
            name = self.refs[r.logical_id]
            kwargs = {
                "AlarmName": name,
                "MetricName": p["MetricName"],
                "Namespace": p["Namespace"],
                "Statistic": p.get("Statistic", "Maximum"),
                "Period": int(p["Period"]),
                "EvaluationPeriods": int(p["EvaluationPeriods"]),
                "Threshold": float(p["Threshold"]),
                "ComparisonOperator": p["ComparisonOperator"],
                "TreatMissingData": p.get("TreatMissingData", "missing"),
                "Dimensions": [{"Name": d["Name"], "Value": str(d["Value"])} for d in p.get("Dimensions", [])],
                "AlarmActions": p.get("AlarmActions", []),
                "OKActions": p.get("OKActions", []),
                "AlarmDescription": p.get("AlarmDescription", ""),
            }
            cloudwatch.put_metric_alarm(**kwargs)
            self.alarms[name] = kwargs

    # -- running --------------------------------------------------------------------------
    @contextmanager
    def lambda_routing(self) -> Iterator[None]:
        """Route moto's Lambda invocations (from Step Functions or boto3) to the in-process handlers."""
        from moto.awslambda.models import LambdaFunction

        deployment = self

        def invoke_in_process(fn_self: Any, event: Any = None) -> tuple[str, bool, str]:
            target = deployment.functions.get(fn_self.function_name)
            if target is None:
                return (
                    json.dumps({"errorType": "ResourceNotFoundException", "errorMessage": fn_self.function_name}),
                    True,
                    "",
                )
            if isinstance(event, (str, bytes)):
                event = json.loads(event or "{}")
            result, errored = target.invoke(event)
            return result, errored, ""

        with mock.patch.object(LambdaFunction, "_invoke_lambda", invoke_in_process):
            yield

    def function(self, logical_prefix: str) -> LocalFunction:
        """The function whose logical ID starts with ``logical_prefix`` (e.g. ``Intake``)."""
        matches = [f for f in self.functions.values() if f.logical_id.startswith(logical_prefix)]
        if len(matches) != 1:
            raise KeyError(f"{len(matches)} functions match {logical_prefix!r}")
        return matches[0]

    def table(self, logical_prefix: str) -> str:
        matches = [name for lid, name in self.tables.items() if lid.startswith(logical_prefix)]
        if len(matches) != 1:
            raise KeyError(f"{len(matches)} tables match {logical_prefix!r}")
        return matches[0]
