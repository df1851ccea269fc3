"""Stage rules at synth: prod needs real providers and an alarm e-mail; no sandbox in prod; provider wiring."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk.assertions import Template

import order_domain.env as env_names
from constructs_lib.providers import HttpsProvider, HttpsProviderProps
from stacks.app_builder import build_app
from stacks.order_constructs.stage import PROD_REQUIRED_KEYS, PROVIDER_KEYS, ProviderEndpoint, StageConfig
from tests.infra.conftest import (
    OTEL_LAYER_ARN,
    PROD_CONTEXT,
    PROVIDER_CONTEXT,
    REPO_ROOT,
    InlineFunctionFactory,
    SynthResult,
    as_list,
    cfn,
    present,
)

SANDBOX_FUNCTION_DIRS = ("sandbox_payment", "sandbox_carrier")
#: The runtime contract of the HTTPS adapters (lambdas/order_domain/settings/ reads these).
PAYMENT_ENV = (env_names.PAYMENT_API_URL, env_names.PAYMENT_API_SECRET_ARN)
CARRIER_ENV = (env_names.CARRIER_API_URL, env_names.CARRIER_API_SECRET_ARN)
SANDBOX_ENV = (env_names.PAYMENT_PROVIDER_FUNCTION, env_names.CARRIER_FUNCTION, env_names.LEDGER_TABLE_NAME)


# --- StageConfig rules ----------------------------------------------------------------------------


def test_stage_config_prod_without_keys_names_every_missing_key_in_one_line() -> None:
    with pytest.raises(ValueError) as caught:
        StageConfig(name="prod")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("stage=prod requires context keys missing here: ")
    for key in PROD_REQUIRED_KEYS:
        assert key in message, key


@pytest.mark.parametrize("missing", PROD_REQUIRED_KEYS)
def test_stage_config_prod_missing_one_key_names_only_that_key(missing: str) -> None:
    context = {k: v for k, v in PROD_CONTEXT.items() if k not in ("stage", missing)}
    with pytest.raises(ValueError, match=r"stage=prod requires context keys missing here: (\w+) ") as caught:
        StageConfig(name="prod", **context)
    found = re.search(r"missing here: (\w+) ", str(caught.value))
    assert found is not None and found[1] == missing


def test_stage_config_prod_empty_context_value_counts_as_missing() -> None:
    with pytest.raises(ValueError, match="missing here: alarm_email "):
        StageConfig.from_context(App(context={**PROD_CONTEXT, "alarm_email": ""}).node)


def test_stage_config_prod_with_all_keys_has_no_sandbox() -> None:
    config = StageConfig(name="prod", **{k: v for k, v in PROD_CONTEXT.items() if k != "stage"})
    assert not config.uses_sandbox
    assert config.payment_api == ProviderEndpoint(
        PROVIDER_CONTEXT["payment_api_url"], PROVIDER_CONTEXT["payment_api_secret_arn"]
    )
    assert config.carrier_api == ProviderEndpoint(
        PROVIDER_CONTEXT["carrier_api_url"], PROVIDER_CONTEXT["carrier_api_secret_arn"]
    )


def test_stage_config_dev_defaults_to_sandbox() -> None:
    config = StageConfig()
    assert config.uses_sandbox
    assert (config.payment_api, config.carrier_api) == (None, None)


@pytest.mark.parametrize("given", PROVIDER_KEYS)
def test_stage_config_dev_partial_provider_keys_rejected(given: str) -> None:
    with pytest.raises(ValueError, match="need all four provider context keys; missing: ") as caught:
        StageConfig(**{given: PROVIDER_CONTEXT[given]})
    missing = str(caught.value).rsplit("missing: ", 1)[1].split(", ")
    assert sorted(missing) == sorted(k for k in PROVIDER_KEYS if k != given)


@pytest.mark.parametrize(
    "url", ["http://pay.example.com", "pay.example.com", "https://", "ftp://pay.example.com", "https://pay .com"]
)
def test_stage_config_provider_url_must_be_https(url: str) -> None:
    with pytest.raises(ValueError, match=r"payment_api_url must be an https:// URL"):
        StageConfig(**{**PROVIDER_CONTEXT, "payment_api_url": url})


def test_stage_config_dev_accepts_http_to_loopback_only_for_the_local_sandbox() -> None:
    local = {**PROVIDER_CONTEXT, "payment_api_url": "http://127.0.0.1:9/payment"}
    assert StageConfig(**local).payment_api_url == "http://127.0.0.1:9/payment"
    with pytest.raises(ValueError, match=r"payment_api_url must be an https:// URL with a host"):
        StageConfig(name="prod", alarm_email="a@b.c", otel_layer_arn=OTEL_LAYER_ARN, **local)


@pytest.mark.parametrize(
    "arn",
    [
        "pay-AbCdEf",
        "arn:aws:secretsmanager:us-east-1:123456789012:pay-AbCdEf",  # no "secret:"
        "arn:aws:ssm:us-east-1:123456789012:secret:pay",  # another service
        "arn:aws:secretsmanager:us-east-1:12345:secret:pay",  # account is 12 digits
        "arn:aws:secretsmanager:useast1:123456789012:secret:pay",  # not a region
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:",  # no name
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:pay*",  # a wildcard is no ARN
    ],
)
def test_stage_config_secret_arn_must_look_like_a_secret_arn(arn: str) -> None:
    with pytest.raises(ValueError, match="carrier_api_secret_arn must be a Secrets Manager secret ARN"):
        StageConfig(**{**PROVIDER_CONTEXT, "carrier_api_secret_arn": arn})


def test_stage_config_webhook_secret_arn_must_look_like_a_secret_arn() -> None:
    with pytest.raises(ValueError, match="webhook_secret_arn must be a Secrets Manager secret ARN"):
        StageConfig(webhook_secret_arn="webhook/signing")
    assert (
        StageConfig.from_context(App(context=PROD_CONTEXT).node).webhook_secret_arn
        == PROD_CONTEXT["webhook_secret_arn"]
    )
    assert "webhook_secret_arn" in PROD_REQUIRED_KEYS


@pytest.mark.parametrize(
    ("arn", "resource"),
    [
        (
            "arn:aws:secretsmanager:us-east-1:123456789012:secret:pay-AbCdEf",
            "arn:aws:secretsmanager:us-east-1:123456789012:secret:pay-AbCdEf",
        ),
        (
            "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/pay",
            "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/pay-??????",
        ),
        (
            "arn:aws-cn:secretsmanager:cn-north-1:123456789012:secret:pay",
            "arn:aws-cn:secretsmanager:cn-north-1:123456789012:secret:pay-??????",
        ),
    ],
)
def test_provider_endpoint_secret_resource_complete_or_partial_arn(arn: str, resource: str) -> None:
    assert ProviderEndpoint("https://pay.example.com", arn).secret_resource == resource


# --- cdk synth (the CLI's view) -----------------------------------------------------------------------


def test_app_prod_without_keys_exits_nonzero_with_one_line(tmp_path: Path) -> None:
    """``cdk synth -c stage=prod`` runs ``python app.py`` with the context in CDK_CONTEXT_JSON."""
    result = subprocess.run(
        [sys.executable, "app.py"],
        cwd=REPO_ROOT,
        env={
            **os.environ,
            "CDK_OUTDIR": str(tmp_path),
            "CDK_CONTEXT_JSON": json.dumps({"stage": "prod"}),
            "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    for key in PROD_REQUIRED_KEYS:
        assert key in errors[0], key
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "manifest.json").exists()


def test_build_app_prod_without_provider_keys_raises() -> None:
    with pytest.raises(ValueError, match="payment_api_url, payment_api_secret_arn, carrier_api_url"):
        build_app(context={"stage": "prod", "alarm_email": "ops@example.com"})


# --- prod template: no sandbox ------------------------------------------------------------------------


def test_prod_has_no_sandbox_function_or_ledger(prod: SynthResult) -> None:
    assert prod.stack.payment_provider is None and prod.stack.carrier is None and prod.stack.ledger_table is None
    resources = prod.resources
    assert not [k for k in resources if "Sandbox" in k]
    services = {
        f["Properties"]["Environment"]["Variables"]["POWERTOOLS_SERVICE_NAME"]
        for f in prod.of_type("AWS::Lambda::Function").values()
    }
    assert not {s for s in services if "sandbox" in s}
    prod.template.resource_count_is("AWS::DynamoDB::Table", 4)  # idempotency, orders, inventory, failures
    assert "LedgerTableName" not in prod.template.to_json()["Outputs"]


def _staged_asset_dirs(synth: SynthResult) -> list[Path]:
    manifest = json.loads((synth.outdir / f"{synth.stack.artifact_id}.assets.json").read_text())
    return [
        synth.outdir / asset["source"]["path"]
        for asset in manifest["files"].values()
        if (synth.outdir / asset["source"]["path"]).is_dir()
    ]


def test_prod_assets_and_layers_contain_no_sandbox_code(prod: SynthResult) -> None:
    dirs = _staged_asset_dirs(prod)
    assert len(dirs) == 11 + 2  # a code asset per function (the webhook's too), the two layers
    for directory in dirs:
        for path in directory.rglob("*"):
            assert "sandbox" not in path.relative_to(directory).parts, path
            assert not path.name.startswith("sandbox"), path
    layer_packages = {p.name for d in dirs if (d / "python").is_dir() for p in (d / "python").iterdir()}
    assert {"lambda_resilience", "order_domain"} <= layer_packages
    assert "sandbox" not in layer_packages


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_layers_ship_no_test_helpers(stage: str, request: pytest.FixtureRequest) -> None:
    """lambda_resilience.testing (a fake Lambda context, log capture) is for tests: no stage deploys it."""
    dirs = _staged_asset_dirs(request.getfixturevalue(stage))
    middleware = [d / "python" / "lambda_resilience" for d in dirs if (d / "python" / "lambda_resilience").is_dir()]
    assert middleware, "the app-code layer holds the middleware"
    for package in middleware:
        assert (package / "idempotency").is_dir()
        assert not (package / "testing.py").exists()


def test_dev_layer_still_ships_the_sandbox(dev: SynthResult) -> None:
    """The same check sees the sandbox where it is deployed (so the prod assertion can fail)."""
    dirs = _staged_asset_dirs(dev)
    assert any((d / "python" / "sandbox" / "__init__.py").is_file() for d in dirs)


# --- provider wiring -------------------------------------------------------------------------------------


def _env(synth: SynthResult, attr: str) -> dict[str, Any]:
    return dict(synth.properties(synth.logical_id(getattr(synth.stack, attr).function))["Environment"]["Variables"])


def _secret_statements(synth: SynthResult, attr: str) -> list[dict[str, Any]]:
    role = synth.logical_id(getattr(synth.stack, attr).role)
    return [
        s for s in synth.statements_of_role(role) if any(a.startswith("secretsmanager:") for a in as_list(s["Action"]))
    ]


@pytest.mark.parametrize("stage", ["prod", "dev_https"])
@pytest.mark.parametrize(
    ("attr", "env", "context_prefix"),
    [
        ("charge", PAYMENT_ENV, "payment_api"),
        ("refund", PAYMENT_ENV, "payment_api"),
        ("ship", CARRIER_ENV, "carrier_api"),
    ],
)
def test_provider_functions_get_url_secret_and_exact_secret_grant(
    stage: str, attr: str, env: tuple[str, str], context_prefix: str, request: pytest.FixtureRequest
) -> None:
    synth: SynthResult = request.getfixturevalue(stage)
    variables = _env(synth, attr)
    url_var, secret_var = env
    assert variables[url_var] == PROVIDER_CONTEXT[f"{context_prefix}_url"]
    assert variables[secret_var] == PROVIDER_CONTEXT[f"{context_prefix}_secret_arn"]
    assert not set(SANDBOX_ENV) & set(variables)
    (statement,) = _secret_statements(synth, attr)
    assert statement["Effect"] == "Allow"
    assert as_list(statement["Action"]) == ["secretsmanager:GetSecretValue"]
    assert as_list(statement["Resource"]) == [PROVIDER_CONTEXT[f"{context_prefix}_secret_arn"]]


@pytest.mark.parametrize("stage", ["prod", "dev_https"])
def test_provider_secrets_readable_only_by_their_functions(stage: str, request: pytest.FixtureRequest) -> None:
    synth: SynthResult = request.getfixturevalue(stage)
    readers: dict[str, set[str]] = {}
    role_to_attr = {synth.logical_id(f.role): attr for attr, f in vars(synth.stack).items() if hasattr(f, "role")}
    for policy in synth.of_type("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if any(a.startswith("secretsmanager:") or a == "*" for a in as_list(statement["Action"])):
                for resource in as_list(statement["Resource"]):
                    for role in policy["Properties"]["Roles"]:
                        readers.setdefault(str(resource), set()).add(role_to_attr.get(role["Ref"], role["Ref"]))
    assert readers == {
        # The sweeper looks charges and shipments up by key to finish, park and reconcile orders.
        PROVIDER_CONTEXT["payment_api_secret_arn"]: {"charge", "refund", "sweeper"},
        PROVIDER_CONTEXT["carrier_api_secret_arn"]: {"ship", "cancel_shipment", "sweeper"},
        # the webhook's signing secret: its function alone (tests/infra/test_webhook_infra.py)
        webhook_secret(synth): {"provider_webhook"},
    }


def webhook_secret(synth: SynthResult) -> str:
    """The webhook secret's IAM resource as rendered above: the context ARN, or the created secret's Ref."""
    secret = synth.stack.webhook.signing_secret
    return str({"Ref": synth.logical_id(secret)}) if secret is not None else PROD_CONTEXT["webhook_secret_arn"]


@pytest.mark.parametrize("stage", ["prod", "dev_https"])
def test_provider_functions_may_invoke_no_lambda(stage: str, request: pytest.FixtureRequest) -> None:
    synth: SynthResult = request.getfixturevalue(stage)
    for attr in ("charge", "refund", "ship"):
        actions = {
            a
            for s in synth.statements_of_role(synth.logical_id(getattr(synth.stack, attr).role))
            for a in as_list(s["Action"])
        }
        assert not {a for a in actions if a.startswith("lambda:")}, attr


def test_dev_https_deploys_no_sandbox(dev_https: SynthResult) -> None:
    assert not [k for k in dev_https.resources if "Sandbox" in k]
    dev_https.template.resource_count_is("AWS::Lambda::Function", 11)  # the webhook's included


def test_dev_sandbox_functions_get_no_secret_or_https_env(dev: SynthResult) -> None:
    for attr in ("charge", "refund", "ship"):
        variables = _env(dev, attr)
        assert not {*PAYMENT_ENV, *CARRIER_ENV} & set(variables), attr
        assert _secret_statements(dev, attr) == [], attr
    assert _env(dev, "charge")[env_names.PAYMENT_PROVIDER_FUNCTION] == {
        "Ref": dev.logical_id(present(dev.stack.payment_provider).function)
    }
    assert _env(dev, "ship")[env_names.CARRIER_FUNCTION] == {"Ref": dev.logical_id(present(dev.stack.carrier).function)}


def test_https_provider_partial_secret_arn_granted_with_six_character_suffix(
    inline_function: InlineFunctionFactory,
) -> None:
    """A partial ARN matches the secret only with Secrets Manager's ``-XXXXXX`` suffix: grant ``-??????``."""
    partial = "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/pay"
    stack = Stack(App(), "ProviderUnderTest")
    function = inline_function(stack, "Charge")
    other = inline_function(stack, "Other")
    provider = HttpsProvider(
        stack,
        "PaymentApi",
        props=HttpsProviderProps(
            endpoint=ProviderEndpoint("https://pay.example.com", partial), env_prefix=env_names.PAYMENT_API_PREFIX
        ),
    )
    provider.grant_to(function)
    template = Template.from_stack(stack)
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Environment": {
                "Variables": {
                    env_names.PAYMENT_API_URL: "https://pay.example.com",
                    env_names.PAYMENT_API_SECRET_ARN: partial,
                }
            }
        },
    )
    policies = template.find_resources("AWS::IAM::Policy")
    (policy,) = policies.values()  # "Other" was granted nothing
    assert policy["Properties"]["Roles"] == [{"Ref": stack.get_logical_id(cfn(function.role))}]
    assert policy["Properties"]["PolicyDocument"]["Statement"] == [
        {"Action": "secretsmanager:GetSecretValue", "Effect": "Allow", "Resource": f"{partial}-??????"}
    ]
    assert "Environment" not in template.to_json()["Resources"][stack.get_logical_id(cfn(other))]["Properties"]


@pytest.mark.parametrize("prefix", ["payment_api", "PAYMENT-API", "", "1API"])
def test_https_provider_props_env_prefix_must_be_upper_identifier(prefix: str) -> None:
    with pytest.raises(ValueError, match="env_prefix must be an upper-case identifier"):
        HttpsProviderProps(endpoint=ProviderEndpoint("https://a.example.com", "arn"), env_prefix=prefix)
