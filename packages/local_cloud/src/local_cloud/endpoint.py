"""A local endpoint for a deployed app: moto's server on 127.0.0.1 in this process (so the emulator's class-level
patches apply to its backends), this process's clients pointed at it, and a CloudFormation stack holding the
deployed stack's outputs (what tools that take a stack name read)."""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from local_cloud.errors import LocalCloudError

HOST = "127.0.0.1"  # loopback only: nothing outside this machine can reach the endpoint
#: Settings that would send this process's clients somewhere other than the local endpoint.
_REDIRECTING_ENV = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")


class PortInUse(LocalCloudError, RuntimeError):
    """The requested port is taken (another local endpoint, LocalStack, a moto server...)."""


def _moto_api(endpoint: str, path: str, body: dict[str, Any] | None = None) -> Any:
    request = urllib.request.Request(
        f"{endpoint}/moto-api/{path}",
        data=json.dumps(body or {}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never via a proxy
    with direct.open(request, timeout=10) as response:
        return json.loads(response.read() or b"null")


def _check_port_free(port: int) -> None:
    with socket.socket() as probe:
        try:
            probe.bind((HOST, port))
        except OSError as exc:
            raise PortInUse(f"{HOST}:{port} is in use ({exc.strerror}); pick another with --port") from None


@contextmanager
def moto_server_in_process(port: int) -> Iterator[str]:
    """Start moto's ThreadedMotoServer on 127.0.0.1 in this process; yield its endpoint URL.

    Its backends are reset on start and on exit, and Step Functions executes the real ASL
    (set through moto's ``/moto-api/config``, restored on exit).
    """
    from moto.core.config import default_user_config
    from moto.server import ThreadedMotoServer

    if port:
        _check_port_free(port)
    werkzeug_log = logging.getLogger("werkzeug")
    werkzeug_level = werkzeug_log.level
    werkzeug_log.setLevel(logging.WARNING)  # no line per request
    try:
        server = ThreadedMotoServer(ip_address=HOST, port=port, verbose=False)
        # start() waits forever if the server thread dies on bind; bound the wait instead.
        starter = threading.Thread(target=server.start, daemon=True, name="moto-server-start")
        starter.start()
        starter.join(timeout=15)
        if starter.is_alive():
            raise PortInUse(f"moto server did not start on {HOST}:{port}")
        endpoint = f"http://{HOST}:{server.get_host_and_port()[1]}"
        saved_sfn_config = dict(default_user_config.get("stepfunctions", {}))
        try:
            _moto_api(endpoint, "reset")
            _moto_api(endpoint, "config", {"stepfunctions": {"execute_state_machine": True}})
            yield endpoint
        finally:
            try:
                _moto_api(endpoint, "config", {"stepfunctions": saved_sfn_config})
                _moto_api(endpoint, "reset")
            finally:
                server.stop()
    finally:
        werkzeug_log.setLevel(werkzeug_level)


def _reset_handler_clients() -> None:
    """Forget boto3 clients the handlers' shared layer cached (they name an endpoint)."""
    shared_aws = sys.modules.get("lambda_resilience.aws")
    if shared_aws is not None:
        shared_aws.reset_clients(session=True)  # the endpoint brings its own credentials


@contextmanager
def endpoint_environment(endpoint: str) -> Iterator[None]:
    """Point every boto3 client this process creates at ``endpoint`` (fake credentials, fixed region).

    ``MOTO_PORT`` is where moto's Step Functions interpreter sends its Lambda and DynamoDB calls
    (``http://localhost:<MOTO_PORT>``); loopback is exempted from any configured HTTP proxy.
    """
    from unittest import mock

    from local_cloud.environment import FAKE_ENV

    port = endpoint.rsplit(":", 1)[-1]
    no_proxy = ",".join(filter(None, [os.environ.get("NO_PROXY") or os.environ.get("no_proxy"), HOST, "localhost"]))
    overlay = {**FAKE_ENV, "AWS_ENDPOINT_URL": endpoint, "MOTO_PORT": port, "NO_PROXY": no_proxy, "no_proxy": no_proxy}
    with mock.patch.dict(os.environ, overlay):
        for key in [k for k in os.environ if k.startswith("AWS_ENDPOINT_URL_") or k in _REDIRECTING_ENV]:
            del os.environ[key]
        _reset_handler_clients()
        try:
            yield
        finally:
            _reset_handler_clients()


def register_stack(stack: str, outputs: dict[str, str]) -> None:
    """A CloudFormation stack named ``stack`` whose Outputs are ``outputs`` (what ``--stack`` reads).

    Its only resource is a throwaway SNS topic: CloudFormation needs one, the app's own
    resources are built by :class:`~local_cloud.deploy.LocalDeployment`.
    """
    import boto3

    from local_cloud.template import REGION

    template = {
        "Description": "local_cloud: outputs of the locally deployed stack",
        "Resources": {
            "LocalOutputsHolder": {"Type": "AWS::SNS::Topic", "Properties": {"TopicName": f"{stack}-outputs"}}
        },
        "Outputs": {key: {"Value": value} for key, value in sorted(outputs.items())},
    }
    cloudformation = boto3.client("cloudformation", region_name=REGION)
    cloudformation.create_stack(StackName=stack, TemplateBody=json.dumps(template))
    waiter = cloudformation.get_waiter("stack_create_complete")
    waiter.wait(StackName=stack, WaiterConfig={"Delay": 1, "MaxAttempts": 30})
