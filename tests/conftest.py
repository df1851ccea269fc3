"""Process-wide test setup: fake credentials, a fixed region, no real AWS endpoint reachable; and the
check that each end-to-end module ran on one pytest-xdist worker."""

from __future__ import annotations

import os

import pytest

# Set before any boto3 client exists. moto intercepts every call; these values just keep
# botocore from looking for real credentials or a real region.
os.environ.update(
    {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SECURITY_TOKEN": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "OrderPipelineTest",
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    }
)
os.environ.pop("AWS_PROFILE", None)


# -- one worker per end-to-end module ------------------------------------------------------------------
# An e2e module's tests share module-scoped fixtures (a deployment, a run) and some read what the module's
# earlier tests did there, so each module must run on one pytest-xdist worker (Makefile: --dist loadfile).
# `--dist loadgroup` stopped grouping silently with pytest 9.2 (pytest-dev/pytest-xdist#1386), which split
# modules and made tests flaky by where they landed; the run now fails if any e2e module is split again.
_E2E_WORKERS: dict[str, set[str]] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    node = getattr(report, "node", None)  # set by pytest-xdist on the controller: the worker that ran it
    if node is not None and report.when == "call" and "e2e" in report.keywords:
        _E2E_WORKERS.setdefault(report.nodeid.split("::", 1)[0], set()).add(str(node.gateway.id))


def pytest_sessionfinish(session: pytest.Session) -> None:
    split = {module: sorted(workers) for module, workers in _E2E_WORKERS.items() if len(workers) > 1}
    if split:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_line(f"e2e modules split across xdist workers (each needs one): {split}", red=True)
