"""What every order function shares (layers, namespace, logs, alarms) and how it is registered.

:class:`OrderFunctionDefaults` is handed to each construct that creates functions; its
:meth:`OrderFunctionDefaults.create` builds a :class:`constructs_lib.function.PipelineFunction`
from the function's folder under ``lambdas/`` and registers it, with its alarms, on the monitoring
facade.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from aws_cdk import Duration, RemovalPolicy, Token
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from constructs import Construct

from constructs_lib.function import PipelineFunction, PipelineFunctionProps
from constructs_lib.monitoring import Monitoring

LAMBDAS_DIR = Path(__file__).resolve().parents[2] / "lambdas"
#: The app's metric namespace, before its stage: see :func:`metrics_namespace`.
METRICS_NAMESPACE_PREFIX = "OrderPipeline"


def metrics_namespace(stage: str) -> str:
    """``OrderPipeline/<stage>``: POWERTOOLS_METRICS_NAMESPACE of every function, and what the alarms
    and the dashboard read.

    Stage isolation: CloudWatch merges every datapoint with the same namespace, name and dimensions
    whoever emitted it (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch_concepts.html),
    so a dev stack in prod's account and Region would feed prod's alarms. A stage-qualified namespace
    rather than a ``stage`` dimension: the namespace is set once, at the edge (one environment variable
    Powertools reads), so no emitter can forget it (a dimension is added by each ``Metrics`` instance,
    and one that misses it publishes a key prod's alarms never read, or one dev and prod share); and
    CloudWatch lists, graphs and bills each stage apart
    (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html:
    the EMF ``Namespace`` of every line is POWERTOOLS_METRICS_NAMESPACE)."""
    return f"{METRICS_NAMESPACE_PREFIX}/{stage}"


#: The saga steps' timeout (the saga's execution budget reads it too).
STEP_TIMEOUT = Duration.seconds(30)
#: The name of AWS's OpenTelemetry Lambda layer (decision 0019).
OTEL_LAYER_NAME = "AWSOpenTelemetryDistroPython"
#: Set on every function listing that layer: the wrapper (https://aws-otel.github.io/docs/getting-started/lambda)
#: in its fast-start mode (its lite SDK, a batching processor and a UDP exporter to the X-Ray daemon that
#: active tracing runs: ``OTEL_AWS_LAMBDA_FAST_START``, read in the layer's ``otel-instrument`` and
#: ``otel_wrapper.py``), with none of its library instrumentations: our own spans (handler, record,
#: step) and the layer's invocation span are exported; AWS SDK and HTTP calls are not spans (decision
#: 0019, measured by ``make bench``: 1.17x the untraced handler import, the full SDK path 2.1x).
OTEL_WRAPPER_ENVIRONMENT = {
    "AWS_LAMBDA_EXEC_WRAPPER": "/opt/otel-instrument",
    "OTEL_AWS_LAMBDA_FAST_START": "true",
    "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "botocore,requests,urllib3",
}


def tracing_environment(layers: tuple[lambda_.ILayerVersion, ...]) -> dict[str, str]:
    """:data:`OTEL_WRAPPER_ENVIRONMENT` when ``layers`` hold AWS's OpenTelemetry layer, else nothing."""
    for layer in layers:
        arn = layer.layer_version_arn
        if not Token.is_unresolved(arn) and f":layer:{OTEL_LAYER_NAME}:" in arn:
            return dict(OTEL_WRAPPER_ENVIRONMENT)
    return {}


@dataclass(frozen=True)
class OrderFunctionDefaults:
    """The settings every order function gets.

    Attributes:
        layers: the Powertools and app-code layers (and AWS's OpenTelemetry layer where configured:
            then every function gets :data:`OTEL_WRAPPER_ENVIRONMENT`).
        monitoring: the facade each function (and its alarms) is registered on.
        alarm_topic: the topic of every function's alarms.
        removal_policy: of the log groups.
        log_retention: of the log groups.
        log_encryption_key: customer-managed key of the log groups (prod), else None.
        metrics_namespace: every function's POWERTOOLS_METRICS_NAMESPACE (:func:`metrics_namespace`).
    """

    layers: tuple[lambda_.ILayerVersion, ...]
    monitoring: Monitoring
    alarm_topic: sns.ITopic
    removal_policy: RemovalPolicy
    log_retention: logs.RetentionDays
    log_encryption_key: kms.IKey | None = None
    metrics_namespace: str = metrics_namespace("dev")

    def create(
        self,
        scope: Construct,
        construct_id: str,
        folder: str,
        environment: Mapping[str, str],
        *,
        timeout: Duration = STEP_TIMEOUT,
        alarm_on_throttles: bool = False,
        alarm_description: str | None = None,
        idempotency_metrics: bool = True,
    ) -> PipelineFunction:
        """The function in ``lambdas/<folder>`` (service name ``folder`` with dashes), registered on
        the facade; ``idempotency_metrics`` sums its idempotency metrics into the dashboard's graph."""
        service = folder.replace("_", "-")
        function = PipelineFunction(
            scope,
            construct_id,
            props=PipelineFunctionProps(
                code_dir=LAMBDAS_DIR / folder,
                service_name=service,
                timeout=timeout,
                layers=self.layers,
                environment={**tracing_environment(self.layers), **environment},
                metrics_namespace=self.metrics_namespace,
                removal_policy=self.removal_policy,
                log_retention=self.log_retention,
                log_encryption_key=self.log_encryption_key,
                alarm_topic=self.alarm_topic,
                alarm_on_throttles=alarm_on_throttles,
                alarm_description=alarm_description,
            ),
        )
        self.monitoring.monitor_function(
            function.function,
            alarms=(function.errors_alarm, function.throttles_alarm),
            idempotency_service=service if idempotency_metrics else None,
        )
        return function
