"""``make rehearse``: the README's deploy, run into an independent local AWS, then the smoke test.

MiniStack (PyPI, pinned in requirements-rehearse.txt) has its own CloudFormation, Lambda (Python
handlers run by MiniStack's own interpreter: the Makefile builds its virtualenv with the Python
of the template's Lambda runtime, holding only MiniStack and boto3, so the layers must supply
everything else, as on AWS), SQS event source mappings and Step Functions. Steps, each with a
bounded wait: start MiniStack on 127.0.0.1 on a free port; ``npx cdk bootstrap``; ``npx cdk synth``
(metric-math alarms rewritten, the resource types MiniStack's CloudFormation does not know set aside:
:mod:`tools.rehearse_template`, the saga's forward catch-all routed to the compensations:
:mod:`tools.rehearse_saga`); ``npx cdk deploy OrderPipeline-dev --require-approval never`` (the
README's command; only the endpoint, the dummy credentials and the CLI's telemetry and notices, off,
differ); the composite alarms set aside, created with PutCompositeAlarm; ``python -m ops smoke``; one
incident, one notification (:mod:`tools.rehearse_incident`); stop the server, also on failure. Exit
status 1 names the step that failed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tools.rehearse_incident import check_one_notification, rule_children
from tools.rehearse_saga import compensate_unknown_errors
from tools.rehearse_template import create_composite_alarms, describe_set_aside, set_aside_unsupported

ROOT = Path(__file__).resolve().parent.parent
REHEARSE_DIR = ROOT / ".rehearse"
DEFAULT_MINISTACK = REHEARSE_DIR / "venv" / "bin" / "ministack"
STACK = "OrderPipeline-dev"
HOST = "127.0.0.1"
REGION = "us-east-1"
#: Bounded waits (seconds). Measured on 2 cores shared with other work (2026-11-28, load average 15 to 38):
#: bootstrap 30 to 80 s, synth 33 to 72 s, deploy 10 to 17 s, smoke 57 to 112 s; 164 to 285 s in all.
START_TIMEOUT = 60.0
BOOTSTRAP_TIMEOUT = 180.0
DEPLOY_TIMEOUT = 300.0
SMOKE_TIMEOUT = 300.0
STOP_TIMEOUT = 10.0
#: The CDK CLI without notices (it would fetch them from the internet: https://docs.aws.amazon.com/cdk/v2/guide/cli.html#cli-notices).
CDK = ["npx", "--no-install", "cdk", "--no-notices"]
#: Settings that would send the CDK CLI or boto3 elsewhere than the local endpoint.
_REDIRECTING_ENV = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")


class StepFailed(Exception):
    """One rehearsal step failed; the message names it."""


def free_port() -> int:
    """A port nobody listens on now (the OS picks it)."""
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def local_environment(endpoint: str) -> dict[str, str]:
    """This environment, pointed at ``endpoint`` with dummy credentials and a fixed region."""
    env = {k: v for k, v in os.environ.items() if k not in _REDIRECTING_ENV and not k.startswith("AWS_ENDPOINT_URL_")}
    no_proxy = ",".join(filter(None, [env.get("NO_PROXY") or env.get("no_proxy"), HOST, "localhost"]))
    env.update(
        AWS_ENDPOINT_URL=endpoint,
        AWS_ACCESS_KEY_ID="test",
        AWS_SECRET_ACCESS_KEY="test",
        AWS_DEFAULT_REGION=REGION,
        AWS_REGION=REGION,
        NO_PROXY=no_proxy,
        no_proxy=no_proxy,
        CDK_DISABLE_VERSION_CHECK="1",
        # The CLI's telemetry otherwise resolves and posts to cdk-cli-telemetry.us-east-1.api.aws (seen with strace
        # on 2026-11-28; https://docs.aws.amazon.com/cdk/v2/guide/cli-telemetry.html).
        CDK_DISABLE_CLI_TELEMETRY="1",
    )
    return env


def _healthy(endpoint: str) -> bool:
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with direct.open(f"{endpoint}/_ministack/health", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def start_ministack(ministack: Path, port: int, log_path: Path) -> subprocess.Popen[bytes]:
    """MiniStack on ``HOST:port`` in its own process group, its output in ``log_path``."""
    if not ministack.exists():
        raise StepFailed(f"start MiniStack: {ministack} not found (run `make rehearse`, which installs it)")
    env = {**os.environ, "GATEWAY_PORT": str(port), "BIND_HOST": HOST, "MINISTACK_REGION": REGION}
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(ministack)], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=REHEARSE_DIR
        )
    endpoint = f"http://{HOST}:{port}"
    deadline = time.monotonic() + START_TIMEOUT
    while not _healthy(endpoint):
        if process.poll() is not None:
            raise StepFailed(f"start MiniStack: exited with status {process.returncode} (log: {log_path})")
        if time.monotonic() > deadline:
            stop(process)
            raise StepFailed(f"start MiniStack: not healthy after {START_TIMEOUT:.0f} s (log: {log_path})")
        time.sleep(0.2)
    return process


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server's process group, SIGKILL it if it is still there after STOP_TIMEOUT."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=STOP_TIMEOUT)
    except ProcessLookupError:
        pass


def run_step(name: str, command: Sequence[str], env: dict[str, str], timeout: float) -> float:
    """Run one step (its output streamed); its wall time, or StepFailed naming it."""
    print(f"rehearse: {name}: {' '.join(command)}", flush=True)
    started = time.monotonic()
    try:
        completed = subprocess.run(command, env=env, cwd=ROOT, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise StepFailed(f"{name}: no answer within {timeout:.0f} s") from None
    if completed.returncode != 0:
        raise StepFailed(f"{name}: exit status {completed.returncode}")
    elapsed = time.monotonic() - started
    print(f"rehearse: {name}: ok in {elapsed:.1f} s", flush=True)
    return elapsed


def single_metric_alarms(template: dict[str, Any]) -> list[str]:
    """Rewrite, in place, each metric-math alarm to the metric of its first ``MetricStat`` (period and
    statistic kept); the alarms rewritten.

    MiniStack 1.5.33's CloudFormation refuses ``AWS::CloudWatch::Alarm`` with ``Metrics`` ("metric math is
    not supported"; tried 2026-11-24), which AWS accepts: the functions' alarms are
    ``Errors - FILL(ExpectedErrors, 0)`` (decision 0020). The rehearsal deploys the rest of the template as
    synthesized; docs/deploy.md says what MiniStack cannot evaluate.
    """
    rewritten = []
    for logical_id, resource in template.get("Resources", {}).items():
        props = resource.get("Properties", {})
        if resource.get("Type") != "AWS::CloudWatch::Alarm" or "Metrics" not in props:
            continue
        stat = next(m["MetricStat"] for m in props.pop("Metrics") if "MetricStat" in m)
        metric = stat["Metric"]
        props.update(
            MetricName=metric["MetricName"],
            Namespace=metric["Namespace"],
            Dimensions=metric.get("Dimensions", []),
            Period=stat["Period"],
            Statistic=stat["Stat"],
        )
        rewritten.append(logical_id)
    return rewritten


def synth_for_ministack(env: dict[str, str], npx: list[str]) -> tuple[Path, float, dict[str, dict[str, Any]]]:
    """``cdk synth`` into .rehearse/cdk.out, with the metric-math alarms MiniStack refuses rewritten and the
    resources of types its CloudFormation does not know set aside (returned by logical ID)."""
    out = REHEARSE_DIR / "cdk.out"
    elapsed = run_step("cdk synth", [*npx, "synth", "--quiet", "--output", str(out)], env, DEPLOY_TIMEOUT)
    path = out / f"{STACK}.template.json"
    template = json.loads(path.read_text())
    rewritten = single_metric_alarms(template)
    routed = compensate_unknown_errors(template)
    try:
        aside = set_aside_unsupported(template)
    except ValueError as exc:
        raise StepFailed(f"cdk synth: {exc}") from None
    path.write_text(json.dumps(template, indent=1))
    print(f"rehearse: {len(rewritten)} metric-math alarms deployed as single-metric alarms (MiniStack)", flush=True)
    print(f"rehearse: States.ALL of {', '.join(routed)} routed to their compensations (MiniStack)", flush=True)
    for line in describe_set_aside(aside):
        print(f"rehearse: not deployed through CloudFormation (MiniStack): {line}", flush=True)
    return out, elapsed, aside


def _client(endpoint: str, service: str) -> Any:
    import boto3

    return boto3.client(
        service, endpoint_url=endpoint, region_name=REGION, aws_access_key_id="test", aws_secret_access_key="test"
    )


def create_set_aside(endpoint: str, aside: dict[str, dict[str, Any]]) -> tuple[float, list[str]]:
    """Create, through MiniStack's API, the composite alarms set aside at synth; its wall time, their names."""
    started = time.monotonic()
    pages = _client(endpoint, "cloudformation").get_paginator("list_stack_resources").paginate(StackName=STACK)
    physical = {r["LogicalResourceId"]: r["PhysicalResourceId"] for p in pages for r in p["StackResourceSummaries"]}
    try:
        created = create_composite_alarms(aside, physical, _client(endpoint, "cloudwatch"))
    except (ValueError, KeyError) as exc:
        raise StepFailed(f"composite alarms: {exc!r}") from None
    print(f"rehearse: composite alarms created with PutCompositeAlarm: {', '.join(created) or 'none'}", flush=True)
    return time.monotonic() - started, created


def check_incidents(endpoint: str, composites: list[str]) -> float:
    """Each composite alarm notifies once for two of its children in ALARM (:mod:`tools.rehearse_incident`);
    its wall time, or StepFailed naming the alarms heard."""
    import boto3

    from ops.target import Target

    started = time.monotonic()
    session = boto3.session.Session(aws_access_key_id="test", aws_secret_access_key="test", region_name=REGION)
    target = Target({}, REGION, endpoint_url=endpoint, _session=session)
    stack = target.client("cloudformation").describe_stacks(StackName=STACK)["Stacks"][0]
    target = Target({o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}, REGION, None, endpoint, session)
    for name in composites:
        found = target.client("cloudwatch").describe_alarms(AlarmNames=[name], AlarmTypes=["CompositeAlarm"])
        children = rule_children(found["CompositeAlarms"][0]["AlarmRule"])
        expected, observed = check_one_notification(target, name, children)
        print(f"rehearse: one incident ({', '.join(children[:2])} in ALARM), notifications heard: {observed}")
        if observed != expected:
            raise StepFailed(f"one incident, one notification: {name}: expected {expected}, heard {observed}")
    return time.monotonic() - started


def subscribe_oncall_on(endpoint: str) -> None:
    """The on-call's stand-in (an SQS queue) subscribed to the deployed stack's alarm topics on MiniStack."""
    from harness.stack.local_endpoint import subscribe_oncall

    def client(service: str) -> Any:
        return _client(endpoint, service)

    stack = client("cloudformation").describe_stacks(StackName=STACK)["Stacks"][0]
    subscribe_oncall({o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}, client)


def rehearse(ministack: Path, port: int | None = None) -> dict[str, float]:
    """The whole rehearsal; the wall time of each step. Raises StepFailed."""
    port = port or free_port()
    endpoint = f"http://{HOST}:{port}"
    log_path = REHEARSE_DIR / f"ministack-{port}.log"
    started = time.monotonic()
    server = start_ministack(ministack, port, log_path)
    times = {"start MiniStack": time.monotonic() - started}
    print(f"rehearse: MiniStack up at {endpoint} in {times['start MiniStack']:.1f} s (log: {log_path})", flush=True)
    env = local_environment(endpoint)
    npx = CDK
    try:
        account = "000000000000"  # MiniStack's default account (MINISTACK_ACCOUNT_ID)
        times["cdk bootstrap"] = run_step(
            "cdk bootstrap", [*npx, "bootstrap", f"aws://{account}/{REGION}"], env, BOOTSTRAP_TIMEOUT
        )
        assembly, times["cdk synth"], aside = synth_for_ministack(env, npx)
        times["cdk deploy"] = run_step(
            "cdk deploy",
            [*npx, "deploy", STACK, "--app", str(assembly), "--require-approval", "never"],
            env,
            DEPLOY_TIMEOUT,
        )
        times["composite alarms"], composites = create_set_aside(endpoint, aside)
        # --no-api: MiniStack 1.5.33 deploys the order API but its own mapping-template engine is a subset of
        # Velocity: tried on 2026-11-24, it returned the request template's #set/#if directives as text and
        # answered 400 to a valid order. The API's templates are checked on Velocity proper (airspeed) by
        # `ops local up`'s smoke (tests/ops/test_smoke_local.py) and packages/local_cloud/tests/test_apigateway.py.
        subscribe_oncall_on(endpoint)  # a dev stack has no alarm_email: ops smoke fails on unconfirmed topics
        smoke = [sys.executable, "-m", "ops", "smoke", "--stack", STACK, "--endpoint-url", endpoint, "--region", REGION]
        smoke.append("--no-api")
        # --dead-letter: without the API the malformed order goes to the queue and is dead-lettered (intake's
        # classification, checked on the deployed code); MiniStack evaluates no alarm, so it pages nobody here.
        smoke.append("--dead-letter")
        times["ops smoke"] = run_step("ops smoke", smoke, env, SMOKE_TIMEOUT)
        times["one notification"] = check_incidents(endpoint, composites)  # after the smoke: it forces alarms
    except StepFailed as exc:
        raise StepFailed(f"{exc} (MiniStack log: {log_path})") from None
    finally:
        stop(server)
    return times


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.rehearse", description=__doc__.splitlines()[0])
    parser.add_argument("--ministack", type=Path, default=DEFAULT_MINISTACK, help="the ministack executable")
    parser.add_argument("--port", type=int, default=None, help="port (default: a free one)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        times = rehearse(args.ministack.absolute(), args.port)
    except StepFailed as exc:
        print(f"rehearse: FAILED at {exc}", file=sys.stderr)
        return 1
    steps = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in times.items())
    print(f"rehearse: passed in {time.monotonic() - started:.0f} s ({steps})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
