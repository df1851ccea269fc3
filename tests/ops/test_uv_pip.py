"""tools.uv_pip: `make setup` installs with uv configured as the machine's pip is (issue 43: setup's time).
uv reads none of pip's configuration, so the tool reads pip's own (`pip config list`) and passes the equivalent;
a setting it cannot carry over sends `make setup` back to pip (exit status 3)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tools import uv_pip

#: `pip config list` on a machine with local wheels, two extra indexes, a constraint file and PIP_* variables.
MACHINE = """\
:env:.cert='/etc/ssl/certs/ca-certificates.crt'
:env:.default-timeout='180'
:env:.disable-pip-version-check='1'
:env:.find-links='/opt/wheels'
global.cert='/etc/ssl/certs/ca-certificates.crt'
global.constraint='/etc/xdg/pip/constraints.txt'
global.extra-index-url='file:///opt/pypi/simple file:///opt/pypi-more/simple'
global.find-links='/srv/older-wheels'
"""


def test_uv_pip_settings_environment_over_install_over_global() -> None:
    """pip's precedence: a PIP_* variable over the [install] section over [global]; other commands' sections
    (here [freeze]) do not apply to an install; names are normalised as pip does (`find_links` is `find-links`)."""
    listed = "global.index-url='https://a/simple'\ninstall.index-url='https://b/simple'\n:env:.index-url='https://c/simple'\n"
    listed += "global.find_links='/w'\nfreeze.exclude='pip'\n"
    assert uv_pip.settings(listed) == {"index-url": "https://c/simple", "find-links": "/w"}


def test_uv_pip_options_carry_indexes_links_constraints_and_certificates() -> None:
    """Each extra index, each find-links location and the constraint file reach uv (for builds too); pip's
    best-match across every index is asked for (uv's default takes a package from the first index that has it);
    the certificate bundle and the timeout go through uv's environment variables."""
    args, env = uv_pip.uv_options(uv_pip.settings(MACHINE))
    assert args == [
        "--index-strategy", "unsafe-best-match", "--compile-bytecode",
        "--constraint", "/etc/xdg/pip/constraints.txt", "--build-constraint", "/etc/xdg/pip/constraints.txt",
        "--extra-index-url", "file:///opt/pypi/simple", "--extra-index-url", "file:///opt/pypi-more/simple",
        "--find-links", "/opt/wheels",
    ]  # fmt: skip
    assert env == {"SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt", "UV_HTTP_TIMEOUT": "180"}


def test_uv_pip_options_plain_pypi_and_switches() -> None:
    """A machine where pip just uses PyPI gives uv no index option; pip's switches map to uv's."""
    assert uv_pip.uv_options({}) == (["--index-strategy", "unsafe-best-match", "--compile-bytecode"], {})
    args, _ = uv_pip.uv_options({"no-index": "true", "no-compile": "1", "pre": "yes", "index-url": "https://i/simple"})
    assert args == ["--index-strategy", "unsafe-best-match", "--index-url", "https://i/simple",
                    "--no-index", "--prerelease", "allow"]  # fmt: skip
    plain = ["--index-strategy", "unsafe-best-match", "--compile-bytecode"]
    assert uv_pip.uv_options({"no-index": "false"})[0] == plain


@pytest.mark.parametrize("setting", [{"prefer-binary": "1"}, {"no-index": "maybe"}, {"user": "1"}])
def test_uv_pip_options_refuse_a_setting_without_an_equivalent(setting: dict[str, str]) -> None:
    """A setting uv would silently ignore (or a value it cannot read) is refused by name: pip installs instead."""
    with pytest.raises(uv_pip.Unmapped, match=next(iter(setting))):
        uv_pip.uv_options(setting)


def test_uv_pip_main_runs_uv_with_pip_settings_or_exits_3() -> None:
    """The command line uv receives: its pip interface, the virtualenv's interpreter, no uv configuration file,
    pip's settings, then make's arguments; with an unmapped setting, exit status 3 and uv is not run."""
    calls: list[tuple[list[str], dict[str, str]]] = []

    def run(command: list[str], env: dict[str, str], check: bool) -> subprocess.CompletedProcess[str]:
        calls.append((command, env))
        return subprocess.CompletedProcess(command, 7)

    status = uv_pip.main(["/v/uv", "install", "--quiet", "-r", "x.txt"], pip_config=lambda: MACHINE, run=run)
    assert status == 7  # uv's own status: make falls back to pip on any failure
    ((command, env),) = calls
    assert command[:6] == ["/v/uv", "pip", "install", "--python", sys.executable, "--no-config"]
    assert command[-5:] == ["--find-links", "/opt/wheels", "--quiet", "-r", "x.txt"]
    assert env["SSL_CERT_FILE"] == "/etc/ssl/certs/ca-certificates.crt" and env["UV_COMPILE_BYTECODE_TIMEOUT"] == "600"
    calls.clear()
    assert uv_pip.main(["/v/uv", "install", "x"], pip_config=lambda: "global.prefer-binary='1'\n", run=run) == 3
    assert not calls


def test_uv_pip_reads_this_interpreters_pip() -> None:
    """The settings are pip's own answer at run time (`python -m pip config list`), not paths written here."""
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True)
    assert uv_pip.pip_config_list() == listed.stdout
