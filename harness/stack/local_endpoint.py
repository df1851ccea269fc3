"""The in-process moto endpoint of ``ops local up``: the generic parts are :mod:`local_cloud.endpoint` (moto's server
on 127.0.0.1 in this process, this process's clients pointed at it, the outputs stack); here a taken port is an
:class:`~ops.errors.OpsError`, which the operator CLI prints as one line (exit status 2)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from local_cloud import endpoint as _endpoint
from local_cloud.endpoint import HOST as HOST
from local_cloud.endpoint import endpoint_environment as endpoint_environment
from local_cloud.endpoint import register_stack as register_stack
from ops.errors import OpsError


class PortInUse(OpsError, RuntimeError):
    """The requested port is taken (another ``local up``, LocalStack, a moto server...)."""


@contextmanager
def moto_server_in_process(port: int) -> Iterator[str]:
    """:func:`local_cloud.endpoint.moto_server_in_process`, a taken port raised as :class:`PortInUse`."""
    try:
        with _endpoint.moto_server_in_process(port) as endpoint:
            yield endpoint
    except _endpoint.PortInUse as exc:
        raise PortInUse(str(exc)) from None


#: The stand-in for the on-call's confirmed e-mail on a local stack: an SQS queue subscribed to each alarm topic.
ONCALL_QUEUE = "local-oncall"


def subscribe_oncall(outputs: dict[str, str], client: Any = None) -> list[str]:
    """Subscribe :data:`ONCALL_QUEUE` to the stack's page and ticket topics (confirmed at once: an SQS
    subscription in the same account needs no confirmation). A dev stack has no ``alarm_email``: without this,
    ``ops pager check`` and ``ops smoke`` rightly fail, as on a real dev account nobody subscribed to. ``client``:
    a factory ``client(service)`` (default boto3's, on this process's environment)."""
    import boto3

    from local_cloud.template import REGION

    make = client or (lambda service: boto3.client(service, region_name=REGION))
    sqs, sns = make("sqs"), make("sns")
    url = sqs.create_queue(QueueName=ONCALL_QUEUE)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    topics = [outputs[k] for k in ("AlarmTopicArn", "TicketTopicArn") if outputs.get(k)]
    for topic in topics:
        sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
    return topics
