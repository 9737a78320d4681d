"""``python -m dvoc_bench.bench ocr-results RUN_DIR...``: the OCR baseline's results from run directories.

Per method: hits / trials (with the project's interval, :func:`~dvoc_bench.analysis.intervals.rate_interval`)
on ``text`` targets, on ``icon`` targets (:data:`~dvoc_bench.benchmarks.ocr_docs.SPLIT`) and on all, the model
calls, and the median wall seconds per model call (``latency_s`` of every step that called the model; a
call on an image OCRed before is a cache hit, a call without a label runs no OCR), and over the distinct
images with a label to look for the median of the slowest call on each (the one that ran Tesseract).
Then the hits of every task per method. With several models in the runs (``models=[sim-ideal,
ocr-tesseract,omniparser-parse]``), each row is a model and method (``ocr-tesseract som``). Markdown on
stdout. Results of ``ocr-tesseract`` are real (not
simulated): the model never reads the truth; the split only groups the tasks.
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

from dvoc_bench.analysis.intervals import rate_interval
from dvoc_bench.benchmarks.ocr_docs import SPLIT
from dvoc_bench.core.rundir import STEPS, TRIALS, is_run_dir, read_jsonl


def _rate(hits: int, n: int) -> str:
    if n == 0:
        return "–"
    lo, hi = rate_interval(hits, n)
    return f"{hits}/{n} = {100 * hits / n:.0f}% [{100 * lo:.0f}, {100 * hi:.0f}]"


def table(*run_dirs: Path) -> str:
    """The Markdown tables for the trials of ``run_dirs`` together."""
    trials = [t for d in run_dirs for t in read_jsonl(d / TRIALS) if t["status"] == "ok"]
    steps = [s for d in run_dirs for s in read_jsonl(d / STEPS)]
    several = len({t["model"] for t in trials}) > 1

    def group(t: dict) -> str:
        return f"{t['model']} {t['method']}" if several else str(t["method"])

    method_of = {t["trial_key"]: group(t) for t in trials}
    lat: dict[str, list[float]] = defaultdict(list)
    per_frame: dict[
        str, float
    ] = {}  # the slowest call on each image: the one that ran the OCR (no cache hit)
    for s in steps:
        if s.get("trial_key") in method_of and s.get("reply_tool_calls") is not None and s.get("latency_s"):
            lat[method_of[s["trial_key"]]].append(float(s["latency_s"]))
            if not str(s.get("reply_text") or "").startswith("no match for ''"):  # no label: no OCR ran
                f = str(s.get("frame_sha"))
                per_frame[f] = max(per_frame.get(f, 0.0), float(s["latency_s"]))
    methods = sorted({group(t) for t in trials})
    sim = any(t["simulated"] for t in trials)
    ocr_s = f"{statistics.median(per_frame.values()):.2f} s" if per_frame else "–"
    out = [
        f"model(s): {', '.join(sorted({t['model'] for t in trials}))}; simulated: {str(sim).lower()}; "
        f"median per OCR'd image (the slowest call on each distinct image with a label to look for): {ocr_s} "
        f"over {len(per_frame)} images",
        "",
        f"| {'model and method' if several else 'method'} | text targets | icon targets | all | model calls "
        "| median s/call |",
        "|---|---|---|---|---|---|",
    ]
    for m in methods:
        ts = [t for t in trials if group(t) == m]
        cells = []
        for kind in ("text", "icon", None):
            sel = [t for t in ts if kind is None or SPLIT.get(t["task"]) == kind]
            cells.append(_rate(sum(bool(t["hit"]) for t in sel), len(sel)))
        med = f"{statistics.median(lat[m]):.2f}" if lat[m] else "–"
        out.append(f"| {m} | {' | '.join(cells)} | {len(lat[m])} | {med} |")
    tasks = sorted({t["task"] for t in trials}, key=lambda s: (s[0], int(s[1:]) if s[1:].isdigit() else 0, s))
    out += ["", "| task | split | " + " | ".join(methods) + " |", "|---|---|" + "---|" * len(methods)]
    for task in tasks:
        row = []
        for m in methods:
            sel = [t for t in trials if t["task"] == task and group(t) == m]
            row.append(f"{sum(bool(t['hit']) for t in sel)}/{len(sel)}")
        out.append(f"| {task} | {SPLIT.get(task, '?')} | " + " | ".join(row) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or not all(is_run_dir(a) for a in args):
        print(
            "usage: python -m dvoc_bench.bench ocr-results RUN_DIR [RUN_DIR...] (run directories)",
            file=sys.stderr,
        )
        return 2
    print(table(*(Path(a) for a in args)))
    return 0
