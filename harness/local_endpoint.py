"""The in-process moto endpoint of ``ops local up``: the generic parts are :mod:`local_cloud.endpoint` (moto's server
on 127.0.0.1 in this process, this process's clients pointed at it, the outputs stack); here a taken port is an
:class:`~ops.errors.OpsError`, which the operator CLI prints as one line (exit status 2)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

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
