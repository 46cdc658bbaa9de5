#!/usr/bin/env python3
"""Draws the CSV of `kjit bench --crossover` as time per call against size (log-log), one line per
column: where the lines cross is where the GPU starts to pay, with and without host<->device copies.

    python3 tools/bench/plot_crossover.py crossover.csv crossover.png [--title TEXT]
"""
import argparse
import csv
import sys


def read(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"{path}: no rows")
    columns = [c for c in rows[0].keys() if c != "n"]
    sizes = [int(r["n"]) for r in rows]
    series = {}
    for c in columns:
        points = [(n, float(r[c])) for n, r in zip(sizes, rows) if r[c] not in ("", None)]
        if points:
            series[c] = points
    return series


LABELS = {
    "cpu_1_thread_ms": "CPU, one thread",
    "gpu_kernel_ms": "GPU kernel, data on the GPU",
    "gpu_with_copies_ms": "GPU with copies to and from pageable host memory",
}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv")
    p.add_argument("png")
    p.add_argument("--title", default="y = a*x + b, float32: time per call")
    args = p.parse_args()
    series = read(args.csv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for column, points in series.items():
        label = LABELS.get(column, column.replace("cpu_", "CPU, ").replace("_threads_ms", " threads"))
        ax.plot([n for n, _ in points], [ms for _, ms in points], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("elements")
    ax.set_ylabel("milliseconds per call (median)")
    ax.set_title(args.title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.png, dpi=120)
    print(f"wrote {args.png} ({len(series)} lines)")


if __name__ == "__main__":
    main()
