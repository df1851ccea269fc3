"""What the whole bill (harness.reporting.costs_all_in) takes from the prod template rather than from a run (a harness
test: the product's tests import nothing of ops/)."""

from __future__ import annotations

import pytest

from harness.reporting.costs_all_in import KMS_KEYED_RESOURCES
from tests.infra.conftest import PROD_CONTEXT, SynthResult, synth_pipeline


@pytest.fixture(scope="module")
def prod(tmp_path_factory: pytest.TempPathFactory) -> SynthResult:
    return synth_pipeline(tmp_path_factory.mktemp("cdk-prod"), **PROD_CONTEXT)


def test_bill_inputs_kms_keyed_resources_match_the_prod_template(prod: SynthResult) -> None:
    """Every queue, table and log group encrypted under a customer-managed key calls KMS for its data keys."""
    keyed = [
        logical_id
        for kind, key in (
            ("AWS::SQS::Queue", "KmsMasterKeyId"),
            ("AWS::Logs::LogGroup", "KmsKeyId"),
        )
        for logical_id, resource in prod.of_type(kind).items()
        if key in resource.get("Properties", {})
    ]
    keyed += [
        logical_id
        for logical_id, resource in prod.of_type("AWS::DynamoDB::Table").items()
        if "KMSMasterKeyId" in resource.get("Properties", {}).get("SSESpecification", {})
    ]
    assert len(keyed) == KMS_KEYED_RESOURCES, sorted(keyed)
