"""`make setup`'s installer: uv's pip interface, configured as this machine's pip is (issue 43: setup's time).

uv (pinned in requirements-bootstrap.txt) installs the virtualenv's pinned set several times faster than pip (parallel
downloads, a shared cache, no per-package subprocess), but it reads none of pip's configuration. This reads pip's
own, at run time (``python -m pip config list``: its configuration files and ``PIP_*`` variables), and passes
uv the equivalent: indexes, find-links, constraint files, certificates, timeouts. Like pip, uv then takes each
package's best version across every index (``--index-strategy unsafe-best-match``; uv's default takes a package
from the first index that lists it) and compiles the bytecode. A setting with no uv equivalent is refused by name
with exit status 3, and `make setup` installs with pip instead (as it does on any failure of uv).

The bytecode compile is most of what is left (about 70 CPU seconds, as with pip; uv runs it on every core). It
stays: where ``PYTHONDONTWRITEBYTECODE`` is set (this machine, CI) no import writes a ``.pyc``, so without it every
test process would compile aws-cdk-lib's modules again (measured: 6.2 against 1.7 CPU seconds to import the CDK
modules, moto and boto3).

Usage (by the Makefile, with the virtualenv's interpreter): ``python tools/uv_pip.py UV install ARGS...``.
Standard library only: it runs before anything else is installed.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Callable, Sequence

#: pip's configuration sections an install reads, lowest precedence first (pip's own order: the environment wins).
SECTIONS = ("global", "install", ":env:")
#: pip settings that change nothing in what is installed (output, pip's own cache and checks).
IGNORED = frozenset(
    {"disable-pip-version-check", "quiet", "verbose", "progress-bar", "no-input", "no-color", "log", "cache-dir",
     "root-user-action", "require-virtualenv", "no-python-version-warning", "exists-action"}
)  # fmt: skip
#: Settings holding a list (pip splits them on whitespace) and the uv option each item becomes.
LISTS = {
    "constraint": ("--constraint", "--build-constraint"),
    "extra-index-url": ("--extra-index-url",),
    "find-links": ("--find-links",),
    "trusted-host": ("--allow-insecure-host",),
    "only-binary": ("--only-binary",),
    "no-binary": ("--no-binary",),
}
#: pip switches and the uv options they become when on.
SWITCHES = {
    "no-index": ("--no-index",),
    "pre": ("--prerelease", "allow"),
    "no-build-isolation": ("--no-build-isolation",),
    "no-cache-dir": ("--no-cache",),
}
#: Settings uv reads from its environment.
ENVIRONMENT = {
    "cert": ("SSL_CERT_FILE",),
    "client-cert": ("SSL_CLIENT_CERT",),
    "timeout": ("UV_HTTP_TIMEOUT",),
    "default-timeout": ("UV_HTTP_TIMEOUT",),
    "retries": ("UV_HTTP_RETRIES",),
    "proxy": ("HTTP_PROXY", "HTTPS_PROXY"),
}
TRUE, FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}
#: Exit status when pip's settings cannot be carried over: the Makefile then installs with pip.
UNMAPPED_STATUS = 3


class Unmapped(ValueError):
    """A pip setting uv has no equivalent for (or a value this cannot read)."""


def settings(config_list: str) -> dict[str, str]:
    """pip's effective install settings from ``pip config list`` (``section.name='value'`` lines)."""
    by_section: dict[str, dict[str, str]] = {section: {} for section in SECTIONS}
    for line in config_list.splitlines():
        key, sep, value = line.partition("=")
        section, dot, name = key.rpartition(".")
        if sep and dot and section in by_section:
            by_section[section][name.strip().lower().replace("_", "-")] = str(ast.literal_eval(value))
    merged: dict[str, str] = {}
    for section in SECTIONS:
        merged.update(by_section[section])
    return merged


def _switch(name: str, value: str) -> bool:
    if value.strip().lower() not in TRUE | FALSE:
        raise Unmapped(f"pip setting {name}={value!r}: not a yes/no value")
    return value.strip().lower() in TRUE


def uv_options(pip_settings: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """uv's options and environment variables for pip's settings; :class:`Unmapped` names one it cannot carry."""
    no_compile = "no-compile" in pip_settings and _switch("no-compile", pip_settings["no-compile"])
    args = ["--index-strategy", "unsafe-best-match", *([] if no_compile else ["--compile-bytecode"])]
    env: dict[str, str] = {}
    for name, value in sorted(pip_settings.items()):
        if name in IGNORED or name == "no-compile":
            continue
        if name == "index-url":
            args += ["--index-url", value]
        elif name in LISTS:
            args += [arg for item in value.split() for option in LISTS[name] for arg in (option, item)]
        elif name in SWITCHES:
            args += list(SWITCHES[name]) if _switch(name, value) else []
        elif name in ENVIRONMENT:
            env.update(dict.fromkeys(ENVIRONMENT[name], value))
        else:
            raise Unmapped(f"pip setting {name}={value!r} has no uv equivalent here")
    return args, env


def pip_config_list() -> str:
    """This interpreter's pip's configuration, as pip lists it."""
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True)
    return listed.stdout


def main(
    argv: Sequence[str],
    pip_config: Callable[[], str] = pip_config_list,
    run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run,
) -> int:
    """Run ``UV pip COMMAND --python <this interpreter> <pip's settings> ARGS``; uv's exit status, or 3."""
    uv, command, *rest = argv
    try:
        args, env = uv_options(settings(pip_config()))
    except (Unmapped, subprocess.CalledProcessError, SyntaxError, ValueError) as error:
        print(f"uv_pip: {error}", file=sys.stderr)
        return UNMAPPED_STATUS
    # Large generated modules (aws-cdk-lib's) compile slowly on a loaded machine: uv's 60 s per file is too short.
    full = [uv, "pip", command, "--python", sys.executable, "--no-config", *args, *rest]
    return run(full, env={"UV_COMPILE_BYTECODE_TIMEOUT": "600", **os.environ, **env}, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
