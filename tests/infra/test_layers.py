"""constructs_lib.layers: staging under the app's build folder, architectures, pure Python only."""

from __future__ import annotations

from pathlib import Path

import pytest
from aws_cdk import App, Stack, Stage
from aws_cdk.assertions import Template
from constructs import Construct

import constructs_lib.layers
from constructs_lib.layers import (
    STAGING_FOLDER,
    PythonPackagesLayer,
    PythonPackagesLayerProps,
    SourceTreeLayer,
    SourceTreeLayerProps,
    staging_root,
)
from tests.infra.conftest import SynthResult


@pytest.fixture
def package(tmp_path: Path) -> Path:
    pkg = tmp_path / "src" / "mylib"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("VALUE = 1\n")
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    return pkg


def test_source_tree_layer_stages_under_app_outdir(tmp_path: Path, package: Path) -> None:
    outdir = tmp_path / "cdk.out"
    stack = Stack(App(outdir=str(outdir)), "LayersUnderTest")
    layer = SourceTreeLayer(stack, "Code", props=SourceTreeLayerProps(packages=[package]))
    assert layer.staged_at.parent == outdir.resolve() / STAGING_FOLDER
    assert (layer.staged_at / "python" / "mylib" / "__init__.py").read_text() == "VALUE = 1\n"
    assert not (layer.staged_at / "python" / "mylib" / "__pycache__").exists()
    # nothing next to the library (it may sit in a read-only site-packages)
    library_root = Path(constructs_lib.layers.__file__).resolve().parent.parent
    assert not str(layer.staged_at).startswith(str(library_root / ".build"))


def test_source_tree_layer_exclude_leaves_out_matching_files(tmp_path: Path, package: Path) -> None:
    (package / "testing.py").write_text("FAKE = 1\n")
    stack = Stack(App(outdir=str(tmp_path / "cdk.out")), "LayersUnderTest")
    props = SourceTreeLayerProps(packages=[package], exclude=["mylib/testing.py"])
    layer = SourceTreeLayer(stack, "Code", props=props)
    assert (layer.staged_at / "python" / "mylib" / "__init__.py").is_file()
    assert not (layer.staged_at / "python" / "mylib" / "testing.py").exists()


def test_source_tree_layer_exclude_matching_nothing_is_refused(tmp_path: Path, package: Path) -> None:
    stack = Stack(App(outdir=str(tmp_path / "cdk.out")), "LayersUnderTest")
    with pytest.raises(ValueError, match=r"exclude patterns match no file of the layer: mylib/testng\.py"):
        SourceTreeLayer(stack, "Code", props=SourceTreeLayerProps(packages=[package], exclude=["mylib/testng.py"]))


def test_source_tree_layer_stages_under_explicit_staging_dir(tmp_path: Path, package: Path) -> None:
    stack = Stack(App(outdir=str(tmp_path / "cdk.out")), "LayersUnderTest")
    layer = SourceTreeLayer(
        stack, "Code", props=SourceTreeLayerProps(packages=[package], staging_dir=tmp_path / "build")
    )
    assert layer.staged_at.parent == (tmp_path / "build").resolve()
    assert not (tmp_path / "cdk.out" / STAGING_FOLDER).exists()


def test_layer_staging_same_content_same_directory_and_template(tmp_path: Path, package: Path) -> None:
    """Content-addressed: two apps with different outdirs stage the same name and hash."""
    staged = []
    templates = []
    for name in ("a", "b"):
        stack = Stack(App(outdir=str(tmp_path / name)), "LayersUnderTest")
        staged.append(SourceTreeLayer(stack, "Code", props=SourceTreeLayerProps(packages=[package])).staged_at.name)
        templates.append(Template.from_stack(stack).to_json())
    assert staged[0] == staged[1]
    assert templates[0] == templates[1]


def test_layer_staging_root_is_the_app_outdir_from_a_nested_stage(tmp_path: Path) -> None:
    """A Stage writes its own sub-assembly; layers still stage under the app's (root) outdir."""
    app = App(outdir=str(tmp_path / "cdk.out"))
    stage = Stage(app, "Prod")
    scope = Construct(Stack(stage, "Inner"), "Scope")
    assert Path(stage.outdir).resolve() != Path(app.outdir).resolve()
    assert staging_root(scope) == (tmp_path / "cdk.out").resolve() / STAGING_FOLDER
    assert staging_root(scope, tmp_path / "own") == (tmp_path / "own").resolve()


def test_layers_declare_both_architectures(tmp_path: Path, package: Path) -> None:
    stack = Stack(App(outdir=str(tmp_path)), "LayersUnderTest")
    SourceTreeLayer(stack, "Code", props=SourceTreeLayerProps(packages=[package]))
    PythonPackagesLayer(stack, "Deps", props=PythonPackagesLayerProps(distributions=["jmespath"]))
    layers = Template.from_stack(stack).find_resources("AWS::Lambda::LayerVersion")
    assert len(layers) == 2
    for logical_id, layer in layers.items():
        assert layer["Properties"]["CompatibleArchitectures"] == ["arm64", "x86_64"], logical_id


def test_source_tree_layer_rejects_compiled_extension(tmp_path: Path, package: Path) -> None:
    (package / "_speedups.so").write_bytes(b"\x7fELF")
    stack = Stack(App(outdir=str(tmp_path / "out")), "LayersUnderTest")
    with pytest.raises(ValueError, match="compiled extension"):
        SourceTreeLayer(stack, "Code", props=SourceTreeLayerProps(packages=[package]))


def test_python_packages_layer_rejects_compiled_extension_without_fallback(tmp_path: Path) -> None:
    """wrapt ships a C extension: only its pure-Python fallback keeps the layer architecture-free."""
    stack = Stack(App(outdir=str(tmp_path)), "LayersUnderTest")
    with pytest.raises(ValueError, match="wrapt ships a compiled extension"):
        PythonPackagesLayer(stack, "Deps", props=PythonPackagesLayerProps(distributions=["wrapt"]))
    layer = PythonPackagesLayer(
        stack, "Fallback", props=PythonPackagesLayerProps(distributions=["wrapt"], pure_python_fallback=["wrapt"])
    )
    staged = list((layer.staged_at / "python").rglob("*"))
    assert any(p.suffix == ".py" for p in staged)
    assert not [p for p in staged if p.suffix in (".so", ".pyd", ".dylib")]


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_functions_all_arm64_on_arm64_compatible_layers(stage: str, request: pytest.FixtureRequest) -> None:
    synth: SynthResult = request.getfixturevalue(stage)
    functions = synth.of_type("AWS::Lambda::Function")
    assert len(functions) == (13 if stage == "dev" else 11)  # with the providers' webhook
    for logical_id, function in functions.items():
        assert function["Properties"]["Architectures"] == ["arm64"], logical_id
    layers = synth.of_type("AWS::Lambda::LayerVersion")
    assert len(layers) == 2
    for logical_id, layer in layers.items():
        assert "arm64" in layer["Properties"]["CompatibleArchitectures"], logical_id


def test_pipeline_layers_staged_under_synth_outdir(dev: SynthResult) -> None:
    staged = sorted(p.name.rsplit("-", 1)[0] for p in (dev.outdir / STAGING_FOLDER).iterdir() if p.is_dir())
    assert staged == ["AppCodeLayer", "PowertoolsLayer"]
