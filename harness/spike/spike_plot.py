"""The spike's plot: queue depth, executions in flight, throttles and completions over simulated time."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any


def plot_spike(report: dict[str, Any], path: Path) -> None:
    """Write a 3-panel PNG from ``report["series"]`` ([t, depth, started, throttles, finished] per tick)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = report["series"]
    t = [row[0] / 60 for row in series]
    depth = [row[1] for row in series]
    started = [row[2] for row in series]
    throttles = [row[3] for row in series]
    finished = [row[4] for row in series]
    in_flight = [s - f for s, f in zip(started, finished, strict=True)]
    completed_per_s = [0] + [b - a for a, b in itertools.pairwise(finished)]
    throttles_per_s = [0] + [b - a for a, b in itertools.pairwise(throttles)]
    k = report["scale"]
    fig, axes = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    axes[0].plot(t, depth, color="tab:blue")
    axes[0].set_ylabel(f"queue depth (x{k:g} = 1:1)")
    axes[1].plot(t, in_flight, color="tab:orange", label="executions in flight")
    axes[1].plot(t, completed_per_s, color="tab:green", label="executions completed / s")
    axes[1].plot(t, finished, color="tab:olive", label="executions completed (cumulative)")
    axes[1].set_yscale("symlog")
    axes[1].legend(loc="upper left")
    axes[1].set_ylabel("executions")
    axes[2].plot(t, throttles_per_s, color="tab:red", label="throttled calls / s")
    axes[2].legend(loc="upper left")
    axes[2].set_ylabel("throttles")
    axes[2].set_xlabel("simulated minutes")
    backlog = report["backlog"]
    fig.suptitle(
        f"Spike 1:{k:g}: peak {report['rates_per_minute']['peak']:g}/min for {report['minutes']:g} min; "
        f"max depth {backlog['max_depth']} (x{k:g}), drained {backlog['drained_after_seconds']} s after the peak; "
        f"DLQ'd {report['valid_orders_dead_lettered']}",
        fontsize=9,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
