"""shared.exceptions.classify: transient vs permanent."""

from __future__ import annotations

import json

import pytest
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyValidationError,
)
from botocore.exceptions import ClientError, ReadTimeoutError

from shared.exceptions import (
    InsufficientStock,
    InvalidOrder,
    OperationInProgress,
    PaymentDeclined,
    ProviderUnavailable,
    TransientStepError,
    classify,
)


def _client_error(code: str, status: int = 400) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}}, "Op")


@pytest.mark.parametrize(
    "code", ["ThrottlingException", "ProvisionedThroughputExceededException", "TooManyRequestsException"]
)
def test_classify_throttling_client_error_is_transient(code):
    assert classify(_client_error(code)) == "transient"


def test_classify_server_side_client_error_is_transient():
    assert classify(_client_error("SomethingNew", status=503)) == "transient"


def test_classify_validation_exception_client_error_is_permanent():
    assert classify(_client_error("ValidationException")) == "permanent"


@pytest.mark.parametrize(
    "exc", [InvalidOrder("bad"), PaymentDeclined("no"), InsufficientStock("none"), IdempotencyValidationError("x")]
)
def test_classify_business_and_input_errors_are_permanent(exc):
    assert classify(exc) == "permanent"


def test_classify_invalid_order_is_permanent():
    assert classify(InvalidOrder("malformed")) == "permanent"


@pytest.mark.parametrize(
    "exc",
    [
        ProviderUnavailable("down"),
        OperationInProgress("busy"),
        TransientStepError("retry"),
        IdempotencyAlreadyInProgressError("busy"),
        ReadTimeoutError(endpoint_url="https://example"),
        TimeoutError(),
    ],
)
def test_classify_transient_errors_are_transient(exc):
    assert classify(exc) == "transient"


def test_classify_unknown_exception_is_transient():
    class Surprise(Exception):
        pass

    assert classify(Surprise("?")) == "transient"
    assert classify(RuntimeError("?")) == "transient"


def test_classify_malformed_json_is_permanent():
    with pytest.raises(json.JSONDecodeError) as raised:
        json.loads("{")
    assert classify(raised.value) == "permanent"
