#!/usr/bin/env python3
"""Picture of the routing benchmark: tier distribution and where the time goes, per dataset.

    python scripts/plot_routing_tiers.py runs/routing.json docs/routing-tiers.png

Reads the JSON written by ``scripts/bench_routing.py``. For each dataset, the left panel shows the
share of dev queries per tier; the right one the mean routed latency per tier, split into the
stages of the trace (embed, retrieve, complexity, strategy, cut), with the mean latency of routed
and of always-agentic as horizontal lines.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

STAGES = ("embed", "retrieve", "complexity", "strategy", "cut")
COLOURS = ("#9ecae1", "#4292c6", "#fd8d3c", "#31a354", "#756bb1")
TIER_NAMES = ("0 hybrid", "1 +rerank", "2 agentic", "3 full agentic")


def plot(report: dict, out: Path) -> None:
    datasets = report["datasets"]
    fig, axes = plt.subplots(len(datasets), 2, figsize=(13, 3.8 * len(datasets)), squeeze=False)
    for row, (label, result) in enumerate(datasets.items()):
        per_query = result["per_query"]
        tiers = result["tiers"]
        ax = axes[row][0]
        bars = ax.bar(TIER_NAMES, [100 * s for s in tiers["share"]], color="#6baed6")
        for bar, count in zip(bars, tiers["count"], strict=True):
            ax.annotate(str(count), (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom",
                        fontsize=8)
        ax.set_ylabel("% of dev queries")
        ax.set_title(f"{label}: tier distribution ({result['queries']} queries)")
        ax.set_ylim(0, 105)

        ax = axes[row][1]
        bottoms = [0.0] * 4
        for stage, colour in zip(STAGES, COLOURS, strict=True):
            heights = []
            for tier in range(4):
                values = [q["stages_ms"].get(stage, 0.0) for q in per_query if q["tier"] == tier]
                heights.append(statistics.fmean(values) if values else 0.0)
            ax.bar(TIER_NAMES, heights, bottom=bottoms, color=colour, label=stage)
            bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
        routed = result["summaries"]["routed"]["latency_ms"]["mean"]
        agentic = result["summaries"]["agentic"]["latency_ms"]["mean"]
        ax.axhline(routed, color="black", linestyle="--", linewidth=1, label=f"routed mean {routed:.0f} ms")
        ax.axhline(agentic, color="#de2d26", linestyle=":", linewidth=1.5,
                   label=f"always agentic mean {agentic:.0f} ms")
        ax.set_ylabel("mean latency per query (ms)")
        ax.set_title(f"{label}: where the time goes, by tier")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle("Complexity-aware routing on the dev splits (one benchmark run)", fontsize=11)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", help="JSON from scripts/bench_routing.py --out")
    parser.add_argument("out", help="PNG to write, e.g. docs/routing-tiers.png")
    args = parser.parse_args()
    report = json.loads(Path(args.report).read_text(encoding="utf-8"))
    plot(report, Path(args.out))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
