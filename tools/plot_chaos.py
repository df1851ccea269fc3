"""Plot a chaos report (``chaos-report.json``): orders by outcome, and faults injected by kind.

Usage: ``python -m tools.plot_chaos reports/chaos-report.json reports/chaos-outcomes.png``
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def plot(report_path: Path, out: Path) -> Path:
    report = json.loads(report_path.read_text())
    orders = report["orders"]
    outcomes = {k: orders[k] for k in ("completed", "compensated", "needs_attention", "rejected", "lost", "in_flight")}
    faults = dict(sorted(report["faults_injected"].items()))
    effects = report["side_effects"]
    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(15, 4.8))
    left.bar(
        list(outcomes), list(outcomes.values()), color=["#2e7d32", "#f9a825", "#c62828", "#6d4c41", "#000", "#90a4ae"]
    )
    left.set_title(f"{orders['submitted']} orders: outcome")
    left.tick_params(axis="x", rotation=30)
    middle.barh(list(faults), list(faults.values()), color="#5c6bc0")
    middle.set_title("faults injected")
    dup = {k: effects[k] for k in ("duplicate_charges", "duplicate_refunds", "duplicate_shipments")}
    dup["duplicate_charge_requests\n(absorbed by provider)"] = effects["duplicate_charge_requests"]
    right.bar(list(dup), list(dup.values()), color=["#c62828", "#c62828", "#c62828", "#ff8f00"])
    right.set_ylim(0, max(5, max(dup.values()) * 1.3))
    right.set_title("duplicate side effects (sandbox ledgers)")
    right.tick_params(axis="x", rotation=20)
    for axis in (left, right):
        for patch in axis.patches:
            axis.annotate(
                f"{int(patch.get_height())}",
                (patch.get_x() + patch.get_width() / 2, patch.get_height()),
                ha="center",
                va="bottom",
            )
    held = all(v is None for v in report["invariants"].values())
    fig.suptitle(
        f"chaos run: invariants {'all hold' if held else 'FAILED'}; {report['elapsed']['wall_seconds']:.0f} s wall"
    )
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    return out


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    print(plot(Path(sys.argv[1]), Path(sys.argv[2])))
