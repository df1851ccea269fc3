"""The packages layer resolves what its distributions require and leaves test helpers out (issue 42: a team
listed every transitive dependency by hand and shipped the middleware's test helpers)."""

from __future__ import annotations

import re
from pathlib import Path

from aws_cdk import App, Stack

from constructs_lib.layers import PythonPackagesLayer, PythonPackagesLayerProps


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_layers_packages_layer_resolves_requirements_and_leaves_test_helpers_out(tmp_path: Path) -> None:
    stack = Stack(App(outdir=str(tmp_path / "cdk.out")), "LayerUnderTest")
    layer = PythonPackagesLayer(
        stack, "Middleware", props=PythonPackagesLayerProps(distributions=["lambda-resilience[tracing]"])
    )
    staged = {_canonical(name) for name in layer.versions}
    # Its requirements (the tracing extra's included) and theirs, without listing them.
    assert {
        "lambda-resilience",
        "aws-lambda-powertools",
        "jmespath",
        "typing-extensions",
        "opentelemetry-api",
    } <= staged
    # The AWS SDK the Lambda Python runtime provides is not staged (nor what only it requires).
    assert not staged & {"boto3", "botocore", "s3transfer"}
    python = layer.staged_at / "python"
    assert (python / "lambda_resilience" / "step.py").is_file()  # an editable install's package, copied
    assert (python / "aws_lambda_powertools" / "__init__.py").is_file()
    assert not (python / "lambda_resilience" / "testing.py").exists()  # test helpers never deployed
    assert not list(python.glob("*.pth"))


def test_layers_source_tree_layer_leaves_test_helpers_out_unasked(tmp_path: Path) -> None:
    from constructs_lib.layers import SourceTreeLayer, SourceTreeLayerProps

    source = Path(__file__).resolve().parents[2] / "packages" / "lambda_resilience" / "src" / "lambda_resilience"
    stack = Stack(App(outdir=str(tmp_path / "cdk.out")), "SourceLayerUnderTest")
    layer = SourceTreeLayer(stack, "Middleware", props=SourceTreeLayerProps(packages=[source]))
    python = layer.staged_at / "python"
    assert (python / "lambda_resilience" / "step.py").is_file()
    assert not (python / "lambda_resilience" / "testing.py").exists()
