"""The layers every order function runs with: Powertools (pinned), the app's own code and, where
configured, AWS's OpenTelemetry layer (decision 0019)."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Stack, Token
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from constructs_lib.layers import PythonPackagesLayer, PythonPackagesLayerProps, SourceTreeLayer, SourceTreeLayerProps
from constructs_lib.logical_ids import TransparentScope
from stacks.order_constructs.functions import LAMBDAS_DIR, OTEL_WRAPPER_ENVIRONMENT

#: The middleware package (packages/lambda_resilience), staged into the app code layer.
MIDDLEWARE_PACKAGE_DIR = LAMBDAS_DIR.parent / "packages" / "lambda_resilience" / "src" / "lambda_resilience"
#: Source packages staged into the app-code layer, in every stage ...
APP_CODE_PACKAGES = (MIDDLEWARE_PACKAGE_DIR, LAMBDAS_DIR / "order_domain")
#: Test helpers the middleware ships for its users' tests (a fake Lambda context, log capture): never
#: deployed, in any stage.
APP_CODE_EXCLUDE = ("lambda_resilience/testing.py",)
#: ... and those added only where the sandbox providers are deployed (never in prod), without the
#: sandbox served over HTTP (for the HTTPS adapters' tests and the local run: never deployed).
SANDBOX_CODE_PACKAGES = (LAMBDAS_DIR / "sandbox",)
SANDBOX_CODE_EXCLUDE = ("sandbox/http_server.py",)
#: Runtime distributions staged into the Powertools layer (versions from lambdas/requirements.txt).
LAYER_DISTRIBUTIONS = (
    "aws-lambda-powertools",
    "jmespath",
    "typing_extensions",
    "fastjsonschema",
    "jsonpath-ng",
    "urllib3",  # the HTTPS provider adapters (order_domain.https_providers)
    "opentelemetry-api",  # spans and W3C trace context (lambda_resilience.tracing)
)
#: Distributions staged without their optional compiled extension (none since the X-Ray SDK's wrapt left).
LAYER_PURE_PYTHON_FALLBACK: tuple[str, ...] = ()
#: What AWS's OpenTelemetry layer brings itself (its SDK pins its own API): left out of ours when it
#: is attached, so that /opt/python never holds two versions of one distribution (layers are merged
#: into /opt in the order a function lists them, later over earlier:
#: https://docs.aws.amazon.com/lambda/latest/dg/adding-layers.html).
PROVIDED_BY_OTEL_LAYER = ("opentelemetry-api",)
#: The imported layer's construct ID: after "AppCodeLayer" and "PowertoolsLayer" in sort order (see below).
OTEL_LAYER_ID = "zOpenTelemetryLayer"


@dataclass(frozen=True)
class OrderLayersProps:
    """Props for :class:`OrderLayers`.

    Attributes:
        with_sandbox: also stage the sandbox providers' package (dev without provider keys); default False.
        otel_layer_arn: AWS's OpenTelemetry layer version (``stage.OTEL_LAYER_ARN``, checked by
            :class:`~stacks.order_constructs.stage.StageConfig`), listed last; default none.
    """

    with_sandbox: bool = False
    otel_layer_arn: str | None = None


class OrderLayers(TransparentScope):
    """Powertools and its runtime dependencies (:data:`LAYER_DISTRIBUTIONS`), and the middleware and
    order domain packages (plus the sandbox's where deployed, never in prod).

    With ``otel_layer_arn``: AWS's OpenTelemetry layer too, last, and the OpenTelemetry API is not
    staged in ours (:data:`PROVIDED_BY_OTEL_LAYER`); functions get :data:`OTEL_WRAPPER_ENVIRONMENT`
    (``environment``). The layer must be in the stack's region (checked when the region is known).

    Attributes:
        powertools: the Powertools layer.
        app_code: the app-code layer.
        opentelemetry: AWS's OpenTelemetry layer, or None.
        layers: all of them, in the order functions list them.
        environment: what every function with these layers needs set (the wrapper, or nothing).
    """

    def __init__(self, scope: Construct, construct_id: str, *, props: OrderLayersProps) -> None:
        super().__init__(scope, construct_id)
        arn = props.otel_layer_arn
        distributions = [d for d in LAYER_DISTRIBUTIONS if arn is None or d not in PROVIDED_BY_OTEL_LAYER]
        self.powertools = PythonPackagesLayer(
            self,
            "PowertoolsLayer",
            props=PythonPackagesLayerProps(
                distributions=distributions, pure_python_fallback=LAYER_PURE_PYTHON_FALLBACK
            ),
        ).layer
        packages = [*APP_CODE_PACKAGES, *(SANDBOX_CODE_PACKAGES if props.with_sandbox else ())]
        self.app_code = SourceTreeLayer(
            self,
            "AppCodeLayer",
            props=SourceTreeLayerProps(
                packages=packages,
                exclude=(*APP_CODE_EXCLUDE, *(SANDBOX_CODE_EXCLUDE if props.with_sandbox else ())),
                description="shared middleware, order domain" + (", sandbox providers" if props.with_sandbox else ""),
            ),
        ).layer
        self.opentelemetry: lambda_.ILayerVersion | None = None
        self.environment: dict[str, str] = {}
        if arn is not None:
            region = Stack.of(self).region
            layer_region = arn.split(":")[3]
            if not Token.is_unresolved(region) and region != layer_region:
                raise ValueError(f"otel_layer_arn is in {layer_region}, the stack in {region}: layers are regional")
            # The ID sorts after the other layers' on purpose: with the recognizeLayerVersion feature flag
            # (cdk.json), CDK renders a function's layers sorted by construct path, not in list order, and
            # the merge order into /opt is that rendered order (AWS's layer last: its files win).
            self.opentelemetry = lambda_.LayerVersion.from_layer_version_arn(self, OTEL_LAYER_ID, arn)
            self.environment = dict(OTEL_WRAPPER_ENVIRONMENT)
        self.layers = (self.powertools, self.app_code, *((self.opentelemetry,) if self.opentelemetry else ()))
