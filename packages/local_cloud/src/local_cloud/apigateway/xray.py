"""The stage's X-Ray trace of one request, when the stage has active tracing (``TracingEnabled``).

API Gateway adds an ``X-Amzn-Trace-Id`` header to a request without one and continues the caller's
otherwise; the value is ``$context.xrayTraceId`` in mapping templates and access logs, and the
response carries the trace header
(https://docs.aws.amazon.com/xray/latest/devguide/xray-services-apigateway.html,
https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-mapping-template-reference.html).
The trace ID format is X-Ray's: ``1-<epoch seconds, 8 hex>-<96 random bits, 24 hex>``
(https://docs.aws.amazon.com/xray/latest/devguide/xray-api-sendingdata.html#xray-api-traceids);
``Parent`` is the API stage's own segment ID (16 hex). The ``Sampled`` bit is X-Ray's default rule
(the first request each second, then 5%: https://docs.aws.amazon.com/xray/latest/devguide/xray-console-sampling.html);
the order API's request template makes its own decision (decision 0019), so nothing here depends on it.
"""

from __future__ import annotations

import re
import secrets
import threading
import time

_ROOT = re.compile(r"(?:^|;)\s*Root=(1-[0-9a-f]{8}-[0-9a-f]{24})(?:;|$)")
DEFAULT_RATE = 0.05


class XRayStage:
    """Mints (or continues) a stage's trace header per request; thread safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reservoir_second = -1

    def trace_header(self, incoming: str | None) -> str:
        """``Root=...;Parent=<this stage's segment>;Sampled=0|1``: the caller's Root when it sent one."""
        match = _ROOT.search(incoming or "")
        now = time.time()
        root = match.group(1) if match else f"1-{int(now):08x}-{secrets.token_hex(12)}"
        return f"Root={root};Parent={secrets.token_hex(8)};Sampled={int(self._sampled(now))}"

    def _sampled(self, now: float) -> bool:
        with self._lock:
            if int(now) != self._reservoir_second:
                self._reservoir_second = int(now)
                return True
        return secrets.randbelow(10_000) < DEFAULT_RATE * 10_000
