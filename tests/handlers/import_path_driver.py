"""Run in a fresh interpreter by ``test_import_path.py`` (``python -P -S import_path_driver.py <job.json>``
with ``PYTHONPATH`` set to the modelled directories, as the layer's wrapper sets it): import and invoke
the handlers on exactly that import path.

Stdlib only: with ``-P -S`` the interpreter's path is ``PYTHONPATH`` then the standard library (no
virtualenv, no script directory), so everything else must come from the directories the job models
(the runtime's bundle, the layers' ``/opt/python``). Each handler is loaded from its file, as Lambda
loads it from the function's directory (which holds nothing else).
Prints one JSON object: each invocation's answer or error, where the packages we pin were loaded
from, and any module loaded from outside the modelled directories.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import sysconfig
import traceback
from typing import Any


class Context:
    """The Lambda context fields our middleware reads."""

    def __init__(self, function_name: str) -> None:
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{function_name}"
        self.memory_limit_in_mb = 512
        self.aws_request_id = f"req-{function_name}"
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = "stream"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def _load(task_dir: str, name: str) -> Any:
    """``handler.py`` of ``task_dir``, under a name of its own (every function's module is ``handler``)."""
    spec = importlib.util.spec_from_file_location(f"handler_{name}", os.path.join(task_dir, "handler.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.handler


def _fast_start() -> list[str]:
    """What the layer's otel_wrapper.py runs in fast-start mode before the handler: the distro's lite
    SDK (provider, batching processor, UDP exporter) and the aws-lambda instrumentation. Returns the
    names of the spans the provider starts (a processor of ours beside the layer's)."""
    from amazon.opentelemetry.distro.opentelemetry_lite_sdk import configure_lite_mode
    from opentelemetry.instrumentation.aws_lambda import AwsLambdaInstrumentor

    provider = configure_lite_mode()
    AwsLambdaInstrumentor().instrument()
    started: list[str] = []

    class Count:
        def on_start(self, span: Any, parent_context: Any = None) -> None:
            started.append(span.name)

        def on_end(self, span: Any) -> None:
            pass

        def shutdown(self) -> None:
            pass

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return True

    provider.add_span_processor(Count())
    return started


def _origin(module: str) -> str | None:
    found = sys.modules.get(module)
    return getattr(found, "__file__", None)


def main(job_file: str) -> None:
    with open(job_file) as stream:
        job = json.load(stream)
    stdlib = [sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]]
    os.environ.update(job["env"])
    started = _fast_start() if os.environ.get("OTEL_AWS_LAMBDA_FAST_START") == "true" else None
    handlers: dict[str, Any] = {}
    out: dict[str, Any] = {"imports": {}, "runs": []}
    for name, task_dir in job["functions"].items():
        try:
            handlers[name] = _load(task_dir, name)
            out["imports"][name] = "ok"
        except Exception as exc:  # reported, not raised: the test names every failing function
            out["imports"][name] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}"
    for run in job["runs"]:
        name = run["function"]
        try:
            answer = handlers[name](run["event"], Context(name))
            out["runs"].append({"function": name, "answer": answer})
        except Exception as exc:
            out["runs"].append({"function": name, "error": f"{type(exc).__name__}: {exc}"})
    roots = [*job["path"], *job["functions"].values(), *stdlib, *job.get("extra_roots", [])]
    out["outside"] = sorted(
        m
        for m, mod in list(sys.modules.items())
        if m not in ("__main__", "__mp_main__")  # this driver
        and (f := getattr(mod, "__file__", None))
        and not any(f.startswith(r + os.sep) for r in roots if r)
    )
    out["origins"] = {m: _origin(m) for m in job["report_origins"]}
    out["versions"] = {m: getattr(sys.modules.get(m), "__version__", None) for m in job["report_origins"]}
    out["spans_started_by_the_layer_sdk"] = len(started) if started is not None else None
    print("IMPORT-PATH-RESULT " + json.dumps(out, default=str))


if __name__ == "__main__":
    main(sys.argv[1])
