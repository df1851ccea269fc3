"""The two layers every order function runs with: Powertools (pinned) and the app's own code."""

from __future__ import annotations

from dataclasses import dataclass

from constructs import Construct

from constructs_lib.layers import PythonPackagesLayer, PythonPackagesLayerProps, SourceTreeLayer, SourceTreeLayerProps
from constructs_lib.logical_ids import TransparentScope
from stacks.order_constructs.functions import LAMBDAS_DIR

#: The middleware package (packages/lambda_resilience), staged into the app code layer.
MIDDLEWARE_PACKAGE_DIR = LAMBDAS_DIR.parent / "packages" / "lambda_resilience" / "src" / "lambda_resilience"
#: Source packages staged into the app-code layer, in every stage ...
APP_CODE_PACKAGES = (MIDDLEWARE_PACKAGE_DIR, LAMBDAS_DIR / "order_domain")
#: Test helpers the middleware ships for its users' tests (a fake Lambda context, log capture): never
#: deployed, in any stage.
APP_CODE_EXCLUDE = ("lambda_resilience/testing.py",)
#: ... and those added only where the sandbox providers are deployed (never in prod).
SANDBOX_CODE_PACKAGES = (LAMBDAS_DIR / "sandbox",)
#: Runtime distributions staged into the Powertools layer (versions from lambdas/requirements.txt).
LAYER_DISTRIBUTIONS = (
    "aws-lambda-powertools",
    "jmespath",
    "typing_extensions",
    "fastjsonschema",
    "jsonpath-ng",
    "urllib3",  # the HTTPS provider adapters (order_domain.https_providers)
    "aws-xray-sdk",  # Powertools Tracer (lambda_resilience.tracing)
    "wrapt",  # the X-Ray SDK's dependency; staged without its C extension (pure-Python fallback)
)
#: Distributions staged without their optional compiled extension.
LAYER_PURE_PYTHON_FALLBACK = ("wrapt",)


@dataclass(frozen=True)
class OrderLayersProps:
    """Props for :class:`OrderLayers`.

    Attributes:
        with_sandbox: also stage the sandbox providers' package (dev without provider keys); default False.
    """

    with_sandbox: bool = False


class OrderLayers(TransparentScope):
    """Powertools and its runtime dependencies (:data:`LAYER_DISTRIBUTIONS`), and the middleware and
    order domain packages (plus the sandbox's where deployed, never in prod).

    Attributes:
        powertools: the Powertools layer.
        app_code: the app-code layer.
        layers: both, in the order functions list them.
    """

    def __init__(self, scope: Construct, construct_id: str, *, props: OrderLayersProps) -> None:
        super().__init__(scope, construct_id)
        self.powertools = PythonPackagesLayer(
            self,
            "PowertoolsLayer",
            props=PythonPackagesLayerProps(
                distributions=LAYER_DISTRIBUTIONS, pure_python_fallback=LAYER_PURE_PYTHON_FALLBACK
            ),
        ).layer
        packages = [*APP_CODE_PACKAGES, *(SANDBOX_CODE_PACKAGES if props.with_sandbox else ())]
        self.app_code = SourceTreeLayer(
            self,
            "AppCodeLayer",
            props=SourceTreeLayerProps(
                packages=packages,
                exclude=APP_CODE_EXCLUDE,
                description="shared middleware, order domain" + (", sandbox providers" if props.with_sandbox else ""),
            ),
        ).layer
        self.layers = (self.powertools, self.app_code)
