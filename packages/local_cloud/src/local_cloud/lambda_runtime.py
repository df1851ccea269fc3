"""An in-process stand-in for the Lambda runtime.

Why hand-written: moto's Lambda backend executes functions in Docker, which is not available
here, and no maintained library runs a Python handler in-process with Lambda's contract
(the function's environment from its import to each handler's return, :mod:`local_cloud.function_env`;
a context with a deadline, errors as
``{"errorType", "errorMessage"}`` payloads). This module does exactly that for the handler
code a template names, loading it from the function's own asset directory.

What the handler imports (its layers' packages, e.g. ``/opt/python`` on Lambda) must already be
importable in this interpreter (installed in the virtualenv): the emulator does not edit ``sys.path``.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any
from unittest import mock

from local_cloud.capture import LineCapture, forget_powertools_logger, point_powertools_loggers_at
from local_cloud.clock import SimClock
from local_cloud.function_env import function_environment
from local_cloud.otel_layer import layer_invocation
from local_cloud.powertools_state import invocation_scope
from local_cloud.simtime import EMF_STAMPS
from local_cloud.trace_header import task_trace_header

_counter = itertools.count()


@dataclass
class FakeLambdaContext:
    """The attributes and method Powertools and our handlers read from a Lambda context."""

    function_name: str = "test-function"
    memory_limit_in_mb: int = 512
    timeout_seconds: float = 30.0
    function_version: str = "$LATEST"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    clock: Callable[[], float] = time.monotonic
    _deadline: float = field(init=False)

    def __post_init__(self) -> None:
        self._deadline = self.clock() + self.timeout_seconds

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:us-east-1:123456789012:function:{self.function_name}"

    @property
    def log_group_name(self) -> str:
        return f"/aws/lambda/{self.function_name}"

    @property
    def log_stream_name(self) -> str:
        return "local"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - self.clock()) * 1000))


def load_handler(code_dir: Path, handler: str, env: Mapping[str, str]) -> Callable[[Any, Any], Any]:
    """Import ``handler`` (``module.function``) from ``code_dir`` under ``env``, as a cold start.

    Each load gets a unique module name, so two functions whose files are both ``handler.py``
    do not collide, and a reload is a fresh cold start.
    """
    module_path, _, function_name = handler.rpartition(".")
    source = Path(code_dir) / (module_path.replace(".", "/") + ".py")
    if not source.is_file():
        raise FileNotFoundError(f"handler module {source} not found")
    unique = f"_lambda_{next(_counter)}_{source.parent.name}_{source.stem}"
    spec = importlib.util.spec_from_file_location(unique, source)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {source}")
    module: ModuleType = importlib.util.module_from_spec(spec)
    # Powertools' default service name when the function sets none.
    forget_powertools_logger(env.get("POWERTOOLS_SERVICE_NAME", "service_undefined"))
    with function_environment(env):
        sys.modules[unique] = module
        spec.loader.exec_module(module)
    fn = getattr(module, function_name, None)
    if not callable(fn):
        raise AttributeError(f"{source} has no callable {function_name!r}")
    return fn


class SimulatedCrash(BaseException):
    """The execution environment dies mid-invocation (timeout, out of memory, kill).

    A BaseException, so no ``except Exception`` in the handler (nor Powertools) runs cleanup:
    whatever the handler had written stays as it was, as after a real crash.
    """


#: What Lambda reports when the sandbox dies on a timeout (Step Functions sees this error name).
CRASH_ERROR_TYPE = "Sandbox.Timedout"


def error_payload(exc: BaseException) -> dict[str, Any]:
    """The payload Lambda returns for an unhandled exception."""
    return {
        "errorType": type(exc).__name__,
        "errorMessage": str(exc),
        "stackTrace": traceback.format_tb(exc.__traceback__)[-5:],
    }


def invoke_json(fn: Callable[[Any, Any], Any], event: Any, context: FakeLambdaContext) -> tuple[str, bool]:
    """Call ``fn`` like Lambda does: returns (JSON result, errored)."""
    try:
        result = fn(event, context)
        return json.dumps(result, default=str), False
    except SimulatedCrash as crash:
        return json.dumps({"errorType": CRASH_ERROR_TYPE, "errorMessage": f"Task timed out ({crash})"}), True
    except Exception as exc:  # a Lambda handler's exception becomes an error payload
        return json.dumps(error_payload(exc)), True


@dataclass
class LocalFunction:
    """A template function, run in-process from its own asset directory."""

    logical_id: str
    name: str
    code_dir: Path
    handler: str
    env: dict[str, str]
    timeout: float
    memory: int
    layer_dirs: list[Path]  # the layers' python/ dirs, for reference: their packages must be importable already
    clock: SimClock
    capture: LineCapture | None = None
    invocations: int = 0
    errors: int = 0
    #: (simulated end time, errored) of every invocation: the AWS/Lambda metrics' datapoints.
    history: list[tuple[float, bool]] = field(default_factory=list)
    _fn: Any = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _load(self) -> Any:
        with self._lock:
            if self._fn is None:
                self._fn = load_handler(self.code_dir, self.handler, self.env)
                if self.capture is not None:
                    point_powertools_loggers_at(self.capture)
            return self._fn

    def invoke(self, event: Any) -> tuple[str, bool]:
        """One invocation (a cold start first): returns (JSON result, errored)."""
        fn = self._load()
        context = FakeLambdaContext(
            function_name=self.name, memory_limit_in_mb=self.memory, timeout_seconds=self.timeout, clock=self.clock.now
        )
        with self._lock:
            self.invocations += 1
        ended: list[float] = []

        def handler(event: Any, context: Any) -> Any:
            try:
                return fn(event, context)
            finally:  # the instant its EMF documents were stamped: AWS/Lambda's datapoint falls there too
                ended.append(self.clock.now())

        stamps: list[float] = []
        token = EMF_STAMPS.set(stamps)
        try:
            with (
                invocation_scope(),
                function_environment(self.env),
                layer_invocation(self.env, self.handler, task_trace_header()),
            ):
                # its own Powertools metrics, as its own execution environment would hold
                result, errored = invoke_json(handler, event, context)
        finally:
            EMF_STAMPS.reset(token)
        # AWS/Lambda's datapoint falls where the invocation's EMF document was stamped (its ExpectedErrors
        # in the same minute, decision 0020), else where the handler ended.
        at = stamps[-1] if stamps else ended[0] if ended else self.clock.now()
        if errored and CRASH_ERROR_TYPE in result:
            # A crash is a timeout: the invocation's remaining time passes before anyone notices (on an
            # execution's thread, for that execution only).
            self.clock.sleep(context.get_remaining_time_in_millis() / 1000)
            at = self.clock.now()
        with self._lock:
            self.history.append((at, errored))
            self.errors += int(errored)
        return result, errored


@contextmanager
def route_invocations(functions: Mapping[str, LocalFunction]) -> Iterator[None]:
    """Route moto's Lambda invocations (from Step Functions or boto3) to ``functions`` (by name).

    Patch ``lambda_in_process`` (local_cloud.patches): moto would run the function in Docker.
    """
    from moto.awslambda.models import LambdaFunction

    def invoke_in_process(fn_self: Any, event: Any = None) -> tuple[str, bool, str]:
        target = functions.get(fn_self.function_name)
        if target is None:
            return (
                json.dumps({"errorType": "ResourceNotFoundException", "errorMessage": fn_self.function_name}),
                True,
                "",
            )
        if isinstance(event, (str, bytes)):
            event = json.loads(event or "{}")
        result, errored = target.invoke(event)
        return result, errored, ""

    with mock.patch.object(LambdaFunction, "_invoke_lambda", invoke_in_process):
        yield
