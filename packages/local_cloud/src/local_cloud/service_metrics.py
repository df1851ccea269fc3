"""The datapoints AWS services publish about events only the emulator sees (a throttled invoke, a
throttled state transition, a 5XX the API answered), recorded where each event happens and read by
:class:`local_cloud.metrics.MetricStore` at its next refresh.

Each producer records what AWS defines, at the simulated time of the event:

- ``AWS/Lambda`` ``Throttles`` per ``FunctionName``: "the number of invocation requests that are
  throttled ... Throttled requests and other invocation errors don't count as either Invocations or
  Errors" (https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html).
- ``AWS/States`` ``ExecutionThrottled`` per ``StateMachineArn``: "the number of StateEntered events
  and retries that have been throttled", i.e. state-transition throttling; and ``ThrottledEvents``
  per ``APIName`` (``StartExecution``), the API's own throttling
  (https://docs.aws.amazon.com/step-functions/latest/dg/procedure-cw-metrics.html).
- ``AWS/ApiGateway`` ``Count``, ``4XXError`` and ``5XXError`` per ``ApiName`` and ``Stage``: one
  datapoint per request, 1 when the answer was in that class and 0 otherwise ("The Sum statistic
  represents ... the total count of the 5XXError errors in the given period. The Average statistic
  represents the 5XXError error rate":
  https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-metrics-and-dimensions.html).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

#: (namespace, metric name, dimensions, simulated time, value)
ServiceDatapoint = tuple[str, str, dict[str, str], float, float]


@dataclass
class ServiceMetrics:
    """An append-only, thread-safe log of service datapoints on the simulated clock."""

    now: Callable[[], float]
    points: list[ServiceDatapoint] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, namespace: str, name: str, dimensions: dict[str, str], value: float = 1.0) -> None:
        at = self.now()
        with self._lock:
            self.points.append((namespace, name, dict(dimensions), at, value))

    def since(self, index: int) -> tuple[list[ServiceDatapoint], int]:
        """The datapoints recorded after the first ``index``, and the new index."""
        with self._lock:
            return self.points[index:], len(self.points)

    # -- the producers ----------------------------------------------------------------------
    def lambda_throttled(self, function_name: str) -> None:
        self.record("AWS/Lambda", "Throttles", {"FunctionName": function_name})

    def state_transition_throttled(self, state_machine_arn: str) -> None:
        self.record("AWS/States", "ExecutionThrottled", {"StateMachineArn": state_machine_arn})

    def api_throttled(self, api_name: str) -> None:
        self.record("AWS/States", "ThrottledEvents", {"APIName": api_name})

    def api_request(self, api_name: str, stage: str, status: int) -> None:
        dims = {"ApiName": api_name, "Stage": stage}
        self.record("AWS/ApiGateway", "Count", dims)
        self.record("AWS/ApiGateway", "4XXError", dims, float(400 <= status < 500))
        self.record("AWS/ApiGateway", "5XXError", dims, float(500 <= status < 600))
