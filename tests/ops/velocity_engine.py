"""Apache Velocity 1.7 (Debian's ``velocity`` package, the engine API Gateway documents) with API
Gateway's ``$input``/``$util``/``$context`` (``velocity/ApiGatewayVtl.java``), compiled on first use
into a build directory; :func:`render_all` renders a batch of cases in one JVM."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SOURCE = Path(__file__).resolve().parent / "velocity" / "ApiGatewayVtl.java"
#: Debian's jars: velocity (and the commons it needs), Jackson for JSON (``make setup`` installs them).
JARS = tuple(
    Path("/usr/share/java") / name
    for name in (
        "velocity.jar",
        "commons-lang.jar",
        "commons-collections3.jar",
        "jackson-databind.jar",
        "jackson-core.jar",
        "jackson-annotations.jar",
    )
)


class EngineMissing(RuntimeError):
    """A JDK or a jar is missing: ``make setup`` installs them (README, "Set up")."""


@dataclass(frozen=True)
class Case:
    """One template rendering: the template, the payload, the method request's parameters, ``$context``."""

    template: str
    body: str
    params: dict[str, dict[str, str]]
    context: dict[str, Any]


def _classpath(build: Path) -> str:
    return ":".join([str(build), *map(str, JARS)])


def compile_engine(build: Path) -> Path:
    """Compile the harness into ``build`` (once); ``EngineMissing`` naming what is absent."""
    missing = [str(j) for j in JARS if not j.exists()] + [t for t in ("javac", "java") if shutil.which(t) is None]
    if missing:
        raise EngineMissing(f"Velocity 1.7 harness needs {', '.join(missing)}: run `make setup`")
    if not (build / "ApiGatewayVtl.class").exists():
        build.mkdir(parents=True, exist_ok=True)
        subprocess.run(["javac", "-cp", _classpath(build), "-d", str(build), str(SOURCE)], check=True)
    return build


def render_all(build: Path, cases: list[Case]) -> list[dict[str, Any]]:
    """Each case rendered by Velocity 1.7: ``{"output", "context"}`` or ``{"error"}``."""
    payload = json.dumps([c.__dict__ for c in cases])
    done = subprocess.run(
        ["java", "-cp", _classpath(build), "ApiGatewayVtl"], input=payload, capture_output=True, text=True, check=True
    )
    results: list[dict[str, Any]] = json.loads(done.stdout)
    return results
