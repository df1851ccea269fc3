"""The REST API's stages over HTTP on 127.0.0.1: ``http://127.0.0.1:<port>/<stage>/<path>``.

A ``ThreadingHTTPServer`` from the standard library, bound to loopback only (nothing outside this
machine can reach it). Access log lines go to the stage's CloudWatch Logs group in the local
CloudWatch Logs, one stream per API and stage.
"""

from __future__ import annotations

import threading
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import botocore.exceptions
import botocore.session

from local_cloud.apigateway.gateway import Request, RestApiGateway
from local_cloud.apigateway.integrations import AwsIntegrations
from local_cloud.apigateway.model import RestApi, rest_apis
from local_cloud.clients import aws
from local_cloud.interfaces import Deployment

HOST = "127.0.0.1"
#: A second backend's local credentials (access key, secret): another IAM principal
#: (``arn:aws:iam::<account>:user/local-other``), for trying the API's object-level rules
#: (``curl --aws-sigv4 ... --user local-other:local-other``).
OTHER_CALLER = ("local-other", "local-other")


def local_secrets() -> dict[str, str]:
    """The credentials this process's clients sign with, found by botocore's own credential chain
    (a local run sets them: ``local_cloud.environment.FAKE_ENV``; ``mock_aws`` sets its own), and
    :data:`OTHER_CALLER`."""
    credentials = botocore.session.get_session().get_credentials()
    if credentials is None:
        return dict([OTHER_CALLER])
    frozen = credentials.get_frozen_credentials()
    return {frozen.access_key: frozen.secret_key, **dict([OTHER_CALLER])}


class CloudWatchAccessLog:
    """Writes access log lines to a log group of the local CloudWatch Logs."""

    def __init__(self, stream: str) -> None:
        self.stream = stream
        self._ready: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, group: str, line: str) -> None:
        logs = aws("logs")
        with self._lock:
            if group not in self._ready:
                with suppress(botocore.exceptions.ClientError):  # the template created it
                    logs.create_log_group(logGroupName=group)
                with suppress(botocore.exceptions.ClientError):
                    logs.create_log_stream(logGroupName=group, logStreamName=self.stream)
                self._ready.add(group)
            logs.put_log_events(
                logGroupName=group,
                logStreamName=self.stream,
                logEvents=[{"timestamp": int(time.time() * 1000), "message": line}],
            )


def _handler(gateway: RestApiGateway) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "local-apigateway"

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            split = urllib.parse.urlsplit(self.path)
            query = dict(urllib.parse.parse_qsl(split.query, keep_blank_values=True))
            headers = {k: v for k, v in self.headers.items()}
            host = self.headers.get("Host") or HOST
            request = Request(
                method=self.command,
                path=urllib.parse.unquote(split.path),
                query=query,
                headers=headers,
                body=body,
                url=f"http://{host}{self.path}",
                source_ip=self.client_address[0],
            )
            response = gateway.handle(request)
            self.send_response(response.status)
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(response.body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(response.body)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _serve

        def log_message(self, format: str, *args: Any) -> None:
            return  # the access log is the stage's, in CloudWatch Logs

    return Handler


class ApiServer:
    """One REST API served on 127.0.0.1 (``port`` 0: any free port)."""

    def __init__(self, gateway: RestApiGateway, port: int = 0) -> None:
        self.gateway = gateway
        self.httpd = ThreadingHTTPServer((HOST, port), _handler(gateway))
        self.httpd.daemon_threads = True
        self.port = int(self.httpd.server_address[1])
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True, name="local-apigateway"
        )

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def stage_url(self, stage: str) -> str:
        return f"{self.url}/{stage}"

    def start(self) -> ApiServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)


def gateway_for(
    deployment: Deployment,
    api: RestApi | None = None,
    secrets: Mapping[str, str] | None = None,
    *,
    write_logs: bool = True,
) -> RestApiGateway:
    """The gateway of the template's (only, or given) REST API on a deployed template."""
    if api is None:
        apis = rest_apis(deployment)
        if len(apis) != 1:
            raise LookupError(f"the template has {len(apis)} REST APIs; pass the one to serve")
        api = apis[0]
    return RestApiGateway(
        api,
        AwsIntegrations(deployment),
        local_secrets() if secrets is None else secrets,
        access_log=CloudWatchAccessLog(f"{api.api_id}-access") if write_logs else None,
        metrics=deployment.service_metrics,
    )


@contextmanager
def serve_rest_api(
    deployment: Deployment, port: int = 0, secrets: Mapping[str, str] | None = None, *, write_logs: bool = True
) -> Iterator[ApiServer]:
    """Serve the deployed template's REST API on 127.0.0.1 until the block ends."""
    server = ApiServer(gateway_for(deployment, secrets=secrets, write_logs=write_logs), port).start()
    try:
        yield server
    finally:
        server.stop()
