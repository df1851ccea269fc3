"""lambda_resilience classify: permanent, transient, or unknown (probably a bug)."""

from __future__ import annotations

import json

import pytest
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyValidationError,
)
from botocore.exceptions import ClientError, ReadTimeoutError

from lambda_resilience.classification import classify
from lambda_resilience.exceptions import OperationInProgress, TransientStepError, UnknownStepError
from order_domain.errors import AttemptInProgress, InsufficientStock, InvalidOrder, PaymentDeclined, ProviderUnavailable


def _client_error(code: str, status: int = 400) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}}, "Op")


@pytest.mark.parametrize(
    "code", ["ThrottlingException", "ProvisionedThroughputExceededException", "TooManyRequestsException"]
)
def test_classify_throttling_client_error_is_transient(code):
    assert classify(_client_error(code)) == "transient"


def test_classify_server_side_client_error_is_transient():
    assert classify(_client_error("SomethingNew", status=503)) == "transient"


@pytest.mark.parametrize("code", ["ValidationException", "AccessDeniedException", "ResourceNotFoundException"])
def test_classify_unexpected_client_error_is_unknown(code):
    """Our bug or our deploy's (a bad request, a missing grant): retried and replayable, not discarded."""
    assert classify(_client_error(code)) == "unknown"


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
        AttemptInProgress("attempt 1 running"),
        IdempotencyAlreadyInProgressError("busy"),
        ReadTimeoutError(endpoint_url="https://example"),
        TimeoutError(),
    ],
)
def test_classify_transient_errors_are_transient(exc):
    assert classify(exc) == "transient"


@pytest.mark.parametrize(
    "exc",
    [
        KeyError("order_id"),
        TypeError("Float types are not supported"),
        ValueError("bad"),
        RecursionError(),
        AttributeError("'list' object has no attribute 'get'"),
        RuntimeError("?"),
        UnknownStepError("KeyError: 'x'"),
    ],
)
def test_classify_unexpected_exceptions_are_unknown(exc):
    """A bug in a new deploy must not dead-letter every order at once: unknown is retried, then kept."""
    assert classify(exc) == "unknown"


def test_classify_malformed_json_outside_parse_order_is_unknown():
    """parse_order turns bad JSON into InvalidOrder; a raw JSONDecodeError elsewhere is our bug."""
    with pytest.raises(json.JSONDecodeError) as raised:
        json.loads("{")
    assert classify(raised.value) == "unknown"
