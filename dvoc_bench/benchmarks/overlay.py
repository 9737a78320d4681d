"""Overlay style sweep (``python -m dvoc_bench.bench overlay``): does the simulator's success move smoothly
with the crosshair's colour and size?

Five crosshair colours from red to green, five sizes (arm 5-25 px at the authors' 3 px bars) and five bar
widths (1-5 px at the authors' 15 px arms), each a sweep of the Gemini-like profile, DVOC under
``protocols=[paper]`` on S1-S6 from the paper's 5 start points, ``repeats`` repeats (``6 x 5 x repeats``
trials per condition; 180 at the default 6). Per condition: success under the paper's radius rule with its
95 % interval *clustered by identical first input* (task x start point; a simulated model repeats itself on
identical input, so repeats are not independent). The last line is the largest difference between
neighbouring conditions in percentage points (``max_step_colour_pp``, ``max_step_size_pp``,
``max_step_width_pp``; the issue asks for at most 15), and ``max_step_corner_pp``: arms 5 px with 1 px bars
against arms 10 px with 2 px bars, the corner where both shrink at once (the steepest place of the style
space; reported, not a target met). Figures, not assertions; every result is SIMULATED.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TypedDict

from dvoc_bench.core.rundir import TRIALS, read_jsonl

ROOT = Path(__file__).resolve().parents[2]
MODEL = "sim-gemini-3.1-flash-lite"
COLOURS: tuple[tuple[int, int, int], ...] = (
    (255, 0, 0),
    (192, 64, 0),
    (128, 128, 0),
    (64, 192, 0),
    (0, 255, 0),
)
"""Red to green in equal steps."""
ARMS: tuple[int, ...] = (5, 10, 15, 20, 25)
"""Crosshair sizes: arm length in px at the authors' 3 px bars (the authors' arm is 15)."""
WIDTHS: tuple[int, ...] = (1, 2, 3, 4, 5)
"""Bar thickness in px at the authors' 15 px arms (the authors' bars are 3 px)."""


def _sweep(run_dir: Path, repeats: int, overrides: Sequence[str]) -> list[dict]:
    args = [
        sys.executable,
        "-m",
        "dvoc_bench",
        "experiment=paper_main",
        f"models=[{MODEL}]",
        "methods=[dvoc]",
        f"repeats={repeats}",
        *overrides,
        f"hydra.run.dir={run_dir}",
        "run.quiet=true",
    ]
    p = subprocess.run(
        args, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True
    )
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(args[2:])} failed:\n{p.stderr[-2000:]}")
    return [t for t in read_jsonl(run_dir / TRIALS) if t["status"] == "ok"]


class Condition(TypedDict):
    """One condition's success under the radius rule: trials, hits, rate and its clustered 95 % interval."""

    n: int
    k: int
    rate: float
    lo: float
    hi: float
    tag: str
    """The simulated label (empty for real models)."""


def condition(trials: list[dict]) -> Condition:
    """Success (hit radius) and its clustered 95 % interval of one condition's trials."""
    from dvoc_bench.analysis.clustered import clustered_rate_interval

    y = [1.0 if t["hit_radius"] else 0.0 for t in trials]
    clusters = [f"{t['task']}|{t.get('start_index')}" for t in trials]
    lo, hi = clustered_rate_interval(y, clusters)
    from dvoc_bench.runner.summary import simulated_label

    return {
        "n": len(y),
        "k": int(sum(y)),
        "rate": sum(y) / len(y),
        "lo": lo,
        "hi": hi,
        "tag": simulated_label(trials),
    }


CORNER: tuple[tuple[int, int], ...] = ((5, 1), (10, 2))
"""(arm, bar) scaled together at the small end: the steep corner of the style space (both thin and short)."""
AUTHORS = ((255, 0, 0), 15, 3)
"""The authors' style: colour, arm, bar."""


def _overrides(style: tuple[tuple[int, int, int], int, int]) -> list[str]:
    (r, g, b), arm, width = style
    return [
        f"overlay_style.crosshair_color=[{r},{g},{b}]",
        f"overlay_style.crosshair_arm={arm}",
        f"overlay_style.crosshair_width={width}",
    ]


def bench_overlay(repeats: int = 6, out=print) -> dict[str, float]:
    """Run the conditions (each distinct style once: the authors' style belongs to three axes); print one
    line each; return the largest neighbour step per axis, the corner's included."""
    red, arm0, width0 = AUTHORS
    plan = [("colour", f"crosshair_color={list(c)}", (c, arm0, width0)) for c in COLOURS]
    plan += [("size", f"arm={a} width={width0}", (red, a, width0)) for a in ARMS]
    plan += [("width", f"arm={arm0} width={w}", (red, arm0, w)) for w in WIDTHS]
    plan += [("corner", f"arm={a} width={w}", (red, a, w)) for a, w in CORNER]
    rows: dict[str, list[Condition]] = {}
    done: dict[tuple, Condition] = {}
    with tempfile.TemporaryDirectory(prefix="dvoc-overlay-") as tmp:
        for i, (kind, label, style) in enumerate(plan):
            if style not in done:
                done[style] = condition(_sweep(Path(tmp) / f"c{i}", repeats, _overrides(style)))
            r = done[style]
            rows.setdefault(kind, []).append(r)
            out(
                f"{kind:<6} {label:<30} DVOC hit {100 * r['rate']:5.1f} % "
                f"[{100 * r['lo']:.1f}, {100 * r['hi']:.1f}] ({r['k']} / {r['n']}){r['tag']}"
            )
    steps = {
        k: max(abs(a["rate"] - b["rate"]) for a, b in zip(v, v[1:], strict=False)) * 100
        for k, v in rows.items()
    }
    return {f"max_step_{k}_pp": v for k, v in steps.items()}
