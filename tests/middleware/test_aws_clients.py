"""``lambda_resilience.aws.client``: one boto3 session per process, its clients created once.

A boto3 session loads and parses botocore's service data (endpoints, partitions, each service's model)
for itself: a new session per client repeats that for every client of a cold start, and a session per
test for every test (measured, CPU: about 260 ms per client from a new session, 5 ms for a DynamoDB client
from the same one; docs/results.md). Sessions are not thread-safe, so clients are created under the module's lock
(https://boto3.amazonaws.com/v1/documentation/api/latest/guide/session.html#multithreading-or-multiprocessing-with-sessions).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from unittest import mock

import boto3
import pytest

from lambda_resilience import aws


@pytest.fixture
def fresh() -> Iterator[None]:
    aws.reset_clients(session=True)
    yield
    aws.reset_clients(session=True)


def test_aws_clients_of_every_service_come_from_one_session(fresh: None) -> None:
    with mock.patch.object(boto3.session, "Session", wraps=boto3.session.Session) as sessions:
        first = aws.client("dynamodb")
        assert aws.client("dynamodb") is first
        aws.client("sqs")
        aws.reset_clients()
        again = aws.client("dynamodb")
    assert again is not first  # no cached client survives a reset
    assert sessions.call_count == 1


def test_aws_clients_after_a_reset_follow_the_region_and_endpoint_of_the_environment(fresh: None) -> None:
    aws.client("sqs")
    aws.reset_clients()
    with mock.patch.dict(os.environ, {"AWS_DEFAULT_REGION": "eu-west-1", "AWS_ENDPOINT_URL": "http://127.0.0.1:9"}):
        moved = aws.client("sqs")
    assert (moved.meta.region_name, moved.meta.endpoint_url) == ("eu-west-1", "http://127.0.0.1:9")


def test_aws_clients_reset_with_the_session_starts_a_new_one(fresh: None) -> None:
    """``session=True``: credentials are read again (the local endpoint's reset: other keys, another endpoint)."""
    with mock.patch.object(boto3.session, "Session", wraps=boto3.session.Session) as sessions:
        aws.client("sqs")
        aws.reset_clients(session=True)
        aws.client("sqs")
    assert sessions.call_count == 2
