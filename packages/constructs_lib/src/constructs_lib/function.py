"""Lambda function defaults every pipeline handler shares.

Composes like aws-solutions-constructs: pass any ``lambda_.Function`` option through
``function_props``, bring an existing role or log group; alarms for a function created elsewhere
(any ``lambda_.IFunction``) are :class:`constructs_lib.alarms.FunctionAlarms`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from constructs import Construct

from constructs_lib.alarms import (
    FUNCTION_ALARM_PERIOD,
    FunctionAlarmsProps,
    add_function_alarms,
    expected_errors_metric,
)
from constructs_lib.overrides import PassThrough, check_overrides

if TYPE_CHECKING:
    from constructs_lib.monitoring import Monitoring

#: The runtime every function uses: the Python the app's tests should run on (runtime parity,
#: tests/infra/test_runtime_parity.py; the Makefile builds the virtualenvs from this line). python3.13 is
#: supported by Lambda (deprecation 30 Jun 2029: https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtimes.html);
#: python3.14 is newer but cannot be installed on the project's machines, so nothing would test it.
DEFAULT_RUNTIME = lambda_.Runtime.PYTHON_3_13
#: Graviton: 20% cheaper per GB-second than x86_64 (AWS Lambda pricing); layer content is pure Python.
DEFAULT_ARCHITECTURE = lambda_.Architecture.ARM_64
#: Metric namespace for Powertools Metrics (EMF) when the app names none.
DEFAULT_METRICS_NAMESPACE = "ResilientPipeline"
DEFAULT_LOG_RETENTION = logs.RetentionDays.ONE_MONTH
DEFAULT_REMOVAL_POLICY = RemovalPolicy.DESTROY
__all__ = [
    "DEFAULT_ARCHITECTURE",
    "DEFAULT_RUNTIME",
    "FUNCTION_ALARM_PERIOD",
    "PipelineFunction",
    "PipelineFunctionProps",
]

#: ``lambda_.Function`` options the construct sets from its typed props: use those instead.
_FUNCTION_OWNED = {
    "code": "code_dir",
    "handler": "handler",
    "timeout": "timeout (queues derive their visibility timeout from it)",
    "memory_size": "memory_size",
    "layers": "layers",
    "environment": "environment",
    "architecture": "architecture",
    "role": "existing_role",
    "log_group": "existing_log_group",
    "log_retention": "log_retention (the log group is explicit)",
    "reserved_concurrent_executions": "reserved_concurrency",
}


@dataclass(frozen=True)
class PipelineFunctionProps:
    """Props for :class:`PipelineFunction`.

    Attributes:
        code_dir: directory holding only this function's code (the asset root).
        service_name: ``POWERTOOLS_SERVICE_NAME`` and the ``service`` key on every log line.
        handler: ``module.function`` inside ``code_dir``; default ``handler.handler``.
        timeout: function timeout; default 30 s. Queues consuming into it derive their
            visibility timeout from this (6x).
        memory_size: MB; default 512.
        architecture: instruction set; default ARM_64 (layers must hold pure Python or arm64 builds).
        layers: layers (Powertools, shared middleware); default none.
        environment: extra environment variables; default none.
        log_retention: CloudWatch Logs retention; default one month (prod passes one year).
            Not with ``existing_log_group``.
        log_encryption_key: customer-managed key for the log group (its policy must let
            CloudWatch Logs use it, see :class:`constructs_lib.encryption.DataEncryptionKey`);
            default none (CloudWatch Logs' own encryption). Not with ``existing_log_group``.
        removal_policy: for the log group; default DESTROY. Not with ``existing_log_group``.
        metrics_namespace: ``POWERTOOLS_METRICS_NAMESPACE``; default ``ResilientPipeline``.
        reserved_concurrency: optional reserved concurrency; default unset.
        alarm_topic: SNS topic for the function's alarms; default none (no alarms: then the
            caller owns alarming on ``Errors``, which ``ResilienceChecks`` requires).
        alarm_on_throttles: also alarm on ``Throttles`` (needs ``alarm_topic``); default False.
        alarm_description: what an error of this function means, for the ``Errors`` alarm;
            default names the service.
        function_props: ``lambda_.FunctionOptions`` (or ``lambda_.Function`` keyword arguments)
            merged over the defaults (e.g. ``description``, ``ephemeral_storage_size``, ``tracing``);
            options set from the typed props above are rejected with the prop to use. Default none.
        existing_role: execution role to use instead of creating one (it gets write access to the
            log group when it is mutable); default: a role with no managed policy.
        existing_log_group: log group to use instead of creating one; default: one per function.
        monitoring: the stack's :class:`constructs_lib.monitoring.Monitoring`: the function and its alarms
            register themselves there; default none (register them yourself).
        idempotency_metrics: with ``monitoring``, sum the function's idempotency metrics (service
            ``service_name``) into the dashboard's idempotency graph; default False.
    """

    code_dir: Path
    service_name: str
    handler: str = "handler.handler"
    timeout: Duration = field(default_factory=lambda: Duration.seconds(30))
    memory_size: int = 512
    architecture: lambda_.Architecture = DEFAULT_ARCHITECTURE
    layers: Sequence[lambda_.ILayerVersion] = field(default_factory=tuple)
    environment: Mapping[str, str] = field(default_factory=dict)
    log_retention: logs.RetentionDays | None = None
    removal_policy: RemovalPolicy | None = None
    metrics_namespace: str = DEFAULT_METRICS_NAMESPACE
    reserved_concurrency: int | None = None
    log_encryption_key: kms.IKey | None = None
    alarm_topic: sns.ITopic | None = None
    alarm_on_throttles: bool = False
    alarm_description: str | None = None
    function_props: PassThrough | None = None
    existing_role: iam.IRole | None = None
    existing_log_group: logs.ILogGroup | None = None
    monitoring: Monitoring | None = None
    idempotency_metrics: bool = False

    def __post_init__(self) -> None:
        code_dir = Path(self.code_dir)
        module = self.handler.rsplit(".", 1)[0].replace(".", "/")
        if not (code_dir / f"{module}.py").is_file():
            raise ValueError(f"handler {self.handler!r} not found in {code_dir}")
        if not 128 <= self.memory_size <= 10240:
            raise ValueError(f"memory_size must be within 128..10240 MB, got {self.memory_size}")
        if self.timeout.to_seconds() > 900:
            raise ValueError("Lambda timeout cannot exceed 900 s")
        if self.alarm_on_throttles and self.alarm_topic is None:
            raise ValueError("alarm_on_throttles needs alarm_topic")
        if self.existing_log_group is not None:
            for name in ("log_retention", "log_encryption_key", "removal_policy"):
                if getattr(self, name) is not None:
                    raise ValueError(
                        f"existing_log_group and {name} are mutually exclusive: the log group is not created here"
                    )
        self.function_overrides()

    def function_overrides(self) -> dict[str, Any]:
        """``function_props`` as keyword arguments for ``lambda_.Function`` (validated)."""
        return check_overrides(lambda_.Function, self.function_props, what="function_props", owned=_FUNCTION_OWNED)


#: What every function gets unless ``function_props`` overrides it.
FUNCTION_DEFAULTS: dict[str, Any] = {
    "runtime": DEFAULT_RUNTIME,
    "tracing": lambda_.Tracing.ACTIVE,
    "logging_format": lambda_.LoggingFormat.JSON,
    "application_log_level_v2": lambda_.ApplicationLogLevel.INFO,
    # INFO: Lambda's START and REPORT records (Init Duration of each cold start) reach the log
    # group (https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-log-level.html);
    # `ops cold-starts` reads them after a deploy. About 0.6 KB per invocation (decision 0022).
    "system_log_level_v2": lambda_.SystemLogLevel.INFO,
}


class PipelineFunction(Construct):
    """A Lambda function with the project's defaults.

    Current Python runtime, arm64, active X-Ray tracing, JSON log format with an explicit
    log group (retention set, no LogRetention custom resource), Powertools environment.

    The execution role (unless ``existing_role``) has no AWS managed policy: it may write to its own log group only
    (plus the X-Ray write actions that active tracing adds, which support no resource scoping).

    With ``alarm_topic``: an alarm on its unexpected errors (``Errors - ExpectedErrors`` > 0 in 1 minute,
    one evaluation period, missing data not breaching: business outcomes the middleware counts as
    expected never page) and, with ``alarm_on_throttles``, a ``Throttles`` alarm of the same shape,
    each notifying the topic on ALARM.

    Attributes:
        function: the ``lambda_.Function``.
        role: its execution role (created, or ``existing_role``).
        log_group: its log group (created, or ``existing_log_group``).
        timeout: the configured timeout (queues read it for the 6x rule).
        errors_alarm: the ``Errors`` alarm, or None without ``alarm_topic``.
        throttles_alarm: the ``Throttles`` alarm, or None.
    """

    def __init__(self, scope: Construct, construct_id: str, *, props: PipelineFunctionProps) -> None:
        super().__init__(scope, construct_id)
        self.timeout = props.timeout
        self.log_group: logs.ILogGroup = props.existing_log_group or logs.LogGroup(
            self,
            "Logs",
            retention=props.log_retention or DEFAULT_LOG_RETENTION,
            removal_policy=props.removal_policy or DEFAULT_REMOVAL_POLICY,
            encryption_key=props.log_encryption_key,
        )
        self.role: iam.IRole = props.existing_role or iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"{props.service_name} execution role",
        )
        self.log_group.grant_write(self.role)
        env = {
            "POWERTOOLS_SERVICE_NAME": props.service_name,
            "POWERTOOLS_METRICS_NAMESPACE": props.metrics_namespace,
            "POWERTOOLS_LOG_LEVEL": "INFO",
            **props.environment,
        }
        self.function = lambda_.Function(
            self,
            "Function",
            **{**FUNCTION_DEFAULTS, **props.function_overrides()},
            handler=props.handler,
            code=lambda_.Code.from_asset(str(props.code_dir), exclude=["__pycache__", "*.pyc"]),
            timeout=props.timeout,
            memory_size=props.memory_size,
            architecture=props.architecture,
            layers=list(props.layers),
            environment=env,
            log_group=self.log_group,
            role=self.role,
            reserved_concurrent_executions=props.reserved_concurrency,
        )
        self.errors_alarm: cloudwatch.Alarm | None = None
        self.throttles_alarm: cloudwatch.Alarm | None = None
        if props.alarm_topic is not None:
            self.errors_alarm, self.throttles_alarm = add_function_alarms(
                self,
                FunctionAlarmsProps(
                    function=self.function,
                    alarm_topic=props.alarm_topic,
                    errors_description=props.alarm_description,
                    alarm_on_throttles=props.alarm_on_throttles,
                    expected_errors=expected_errors_metric(props.metrics_namespace, props.service_name),
                ),
                props.service_name,
            )
        if props.monitoring is not None:
            props.monitoring.monitor_function(
                self.function,
                alarms=(self.errors_alarm, self.throttles_alarm),
                idempotency_service=props.service_name if props.idempotency_metrics else None,
            )

    def grant_invoke_to(self, grantee: iam.IGrantable) -> None:
        """Let ``grantee`` invoke this function (the unqualified ARN only, no versions/aliases)."""
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[self.function.function_arn])
        )
