"""One boto3 session for the tests' own clients (``boto3.client``) under moto.

moto's ``mock_aws`` clears boto3's default session at every start, so each test's first ``boto3.client`` made
a new session, and a new session loads and parses botocore's service data again (about 260 ms of CPU
per client from a new session, 5 ms for a DynamoDB client from the same one: docs/results.md). Credentials
are the process's fake ones (tests/conftest.py); the region and endpoint are read at each client's creation, as before.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager

import boto3
from moto import mock_aws


@functools.cache
def _process_session() -> boto3.session.Session:
    return boto3.session.Session()


def reuse_one_session() -> None:
    """Under a started ``mock_aws``: its default boto3 session becomes the process's one (moto restores
    its own when it stops). Created after moto is imported, so moto's botocore handler is among the session's."""
    boto3.DEFAULT_SESSION = _process_session()


@contextmanager
def mocked_aws() -> Iterator[None]:
    """``mock_aws()`` whose default boto3 session is the process's one."""
    with mock_aws():
        reuse_one_session()
        yield
