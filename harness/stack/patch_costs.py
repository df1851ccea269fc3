"""What each speed change saves: paired, interleaved runs with it on and off (CPU seconds).

Usage: ``python -m harness.stack.patch_costs [--orders 150] [--patches a,b] [--gate] [--assembly cdk.out-dir]``
(``make patch-costs``).

Each speed change of :data:`local_cloud.patches_speed.SPEED_CHANGES` (or each patch or change named with
``--patches``) is switched off for one run through ``OPS_LOCAL_DISABLE_PATCHES``; baseline runs (every patch on)
sit between them, so a run with a change off is compared with the baselines just before and after it, on the same
machine under the same load: ``B, off(c1), B, off(c2), B, ...``. Each run is a fresh ``python -m harness local
run`` of the same orders, seed and faults as ``make chaos`` (smaller), on one synthesized assembly; or, with
``--gate``, ``make workshop-tests`` (the part of ``make test`` the emulator runs: issue 43's rule is 10% of
``make test``'s end-to-end time). Its cost is the CPU time (user + system) of the process and everything it
waited for (``RUSAGE_CHILDREN``), and its wall time. A change pays when its run without it costs more than both
neighbouring baselines and more than the baselines' own spread (``--check`` fails otherwise). Prints a table;
``--json`` writes the figures.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from local_cloud.patches import DISABLE_ENV, PATCHES
from local_cloud.patches_speed import SPEED_CHANGES

#: The faults of ``make chaos`` (Makefile CHAOS_FAULTS): the patches are measured on the run they speed up.
CHAOS_FAULTS = [
    *("--duplicate-rate", "0.1", "--crash-rate", "0.03", "--decline-rate", "0.1", "--ship-fail-rate", "0.1"),
    *("--refund-fail-rate", "0.03", "--malformed-rate", "0.03", "--hostile-rate", "0.03", "--throttle-rate", "0.02"),
    *("--ambiguous-rate", "0.005", "--status-write-fail-rate", "0.005", "--park-fail-rate", "0.01"),
    *("--stop-rate", "0.001"),
]


@dataclass(frozen=True)
class Run:
    disabled: str  # "" for a baseline
    cpu_seconds: float
    wall_seconds: float
    ok: bool
    failed_invariants: tuple[str, ...] = ()  # what --check refused, from the run's report


@dataclass(frozen=True)
class Cost:
    patch: str
    without: float  # CPU s of the run with the patch off
    baselines: tuple[float, float]  # the baselines just before and after it
    saves: float  # without - mean(baselines)
    saves_percent: float
    measurable: bool
    wall_without: float = 0.0  # wall s of the run with the patch off
    wall_baselines: tuple[float, float] = (0.0, 0.0)


def speed_patches() -> list[str]:
    """Every name ``--patches`` takes: the speed patches and the changes they form."""
    return [p.name for p in PATCHES if p.kind == "speed"] + [c.name for c in SPEED_CHANGES]


#: ``--gate``'s run: the emulator's share of ``make test``.
GATE_COMMAND = ["make", "-s", "workshop-tests"]


def run_once(disabled: str, orders: int, assembly: Path | None, seed: int) -> Run:
    """One ``ops local run`` (``assembly``) or one ``make workshop-tests`` (``None``) with ``disabled`` switched
    off; its CPU seconds (and its children's) and wall seconds."""
    env = {**os.environ, DISABLE_ENV: disabled}
    with tempfile.TemporaryDirectory(prefix="patch-cost-run-") as tmp:
        report = Path(tmp) / "report.json"
        cmd = GATE_COMMAND
        if assembly is not None:
            cmd = [sys.executable, "-m", "harness", "local", "run", "--orders", str(orders), "--seed", str(seed)]
            cmd += [*CHAOS_FAULTS, "--replay-transient", "--check", "--timeout", "1200", "--assembly", str(assembly)]
            cmd += ["--report-file", str(report)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        done = subprocess.run(
            cmd,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wall = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        invariants = json.loads(report.read_text()).get("invariants", {}) if report.exists() else {}
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    failed = tuple(sorted(name for name, problem in invariants.items() if problem is not None))
    return Run(disabled, round(cpu, 2), round(wall, 2), done.returncode == 0, failed)


def measure(patches: list[str], orders: int, assembly: Path | None, seed: int) -> tuple[list[Run], list[Cost], float]:
    """``B, off(p1), B, off(p2), ..., B``; each patch against its two neighbouring baselines."""
    runs: list[Run] = [run_once("", orders, assembly, seed)]
    print(f"  baseline: {runs[-1].cpu_seconds:.1f} CPU s", file=sys.stderr)
    for name in patches:
        runs.append(run_once(name, orders, assembly, seed))
        print(f"  without {name}: {runs[-1].cpu_seconds:.1f} CPU s", file=sys.stderr)
        runs.append(run_once("", orders, assembly, seed))
        print(f"  baseline: {runs[-1].cpu_seconds:.1f} CPU s", file=sys.stderr)
    baselines = [r.cpu_seconds for r in runs if not r.disabled]
    # Noise: how much two baselines next to each other differ (the same code, the same load, minutes apart).
    noise = max(abs(a - b) for a, b in itertools.pairwise(baselines)) if len(baselines) > 1 else 0.0
    costs = []
    for i, name in enumerate(patches):
        before, without, after = runs[2 * i], runs[2 * i + 1], runs[2 * i + 2]
        mean = (before.cpu_seconds + after.cpu_seconds) / 2
        saves = without.cpu_seconds - mean
        measurable = without.cpu_seconds > max(before.cpu_seconds, after.cpu_seconds) and saves > noise
        costs.append(
            Cost(
                name,
                without.cpu_seconds,
                (before.cpu_seconds, after.cpu_seconds),
                round(saves, 2),
                round(100 * saves / mean, 1),
                measurable,
                without.wall_seconds,
                (before.wall_seconds, after.wall_seconds),
            )
        )
    return runs, costs, noise


def table(costs: list[Cost], noise: float, baselines: list[float]) -> str:
    lines = [
        f"baselines: {len(baselines)} runs, {min(baselines):.1f} to {max(baselines):.1f} CPU s "
        f"(median {statistics.median(baselines):.1f}); largest step between neighbours (noise): {noise:.1f} CPU s",
        "",
        "| off | CPU s without it | baselines before / after | dropping it costs | measurable | wall s without / "
        "baselines |",
        "|---|---|---|---|---|---|",
    ]
    for c in costs:
        lines.append(
            f"| `{c.patch}` | {c.without:.1f} | {c.baselines[0]:.1f} / {c.baselines[1]:.1f} | "
            f"{c.saves:+.1f} CPU s ({c.saves_percent:+.1f}%) | {'yes' if c.measurable else 'no'} | "
            f"{c.wall_without:.0f} / {c.wall_baselines[0]:.0f}, {c.wall_baselines[1]:.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.stack.patch_costs", description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=150, help="orders per run (default 150)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--patches", help="comma-separated speed patch or change names (default: every change)")
    parser.add_argument("--gate", action="store_true", help="time make workshop-tests instead of a chaos run")
    parser.add_argument("--assembly", type=Path, help="a synthesized cdk.out (default: synthesize once)")
    parser.add_argument("--json", type=Path, help="also write the runs and costs here")
    parser.add_argument("--check", action="store_true", help="exit 1 if a patch does not save measurably")
    args = parser.parse_args(argv)
    names = args.patches.split(",") if args.patches else [c.name for c in SPEED_CHANGES]
    unknown = sorted(set(names) - set(speed_patches()))
    if unknown:
        parser.error(f"not speed patches: {', '.join(unknown)} (choose from {', '.join(speed_patches())})")
    with tempfile.TemporaryDirectory(prefix="patch-costs-") as tmp:
        assembly = args.assembly
        if assembly is None and not args.gate:
            from harness.stack.synth import synthesize

            assembly = synthesize(Path(tmp) / "cdk.out", "dev").outdir
        runs, costs, noise = measure(names, args.orders, None if args.gate else Path(assembly), args.seed)
    failed = [r for r in runs if not r.ok]
    baselines = [r.cpu_seconds for r in runs if not r.disabled]
    print(table(costs, noise, baselines))
    if failed:
        for r in failed:
            print(f"run {r.disabled or 'baseline'} failed its checks: {', '.join(r.failed_invariants) or 'no report'}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = {"orders": args.orders, "seed": args.seed, "noise_cpu_seconds": noise}
        payload |= {"runs": [asdict(r) for r in runs], "costs": [asdict(c) for c in costs]}
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    return 1 if failed or (args.check and not all(c.measurable for c in costs)) else 0


if __name__ == "__main__":
    sys.exit(main())
