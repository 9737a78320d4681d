"""``python -m dvoc_bench.bench episodes``: harness seconds per episode step against the step's floor.

The floor is what one step cannot go below without a model: the capture of the task area and the action
(a real click), timed alone on one page (the median of ``--floor-reps`` of each; the page read and the hit
test that every grounded step also makes are printed beside them). The harness time per step is what the
episodes record (``harness_s``: captures, page reads, the hit test, the action, and every wait for the
browser in between) in a real sweep, ``experiment=episodes`` with ``--method`` (default ``oneshot``) and
``sim-ideal`` (SIMULATED answers; the harness is real), at each of ``--inflight`` (default 1 and 4)
episodes in flight. The last line:
``floor_s=<f> inflight=<k>:<s/step>:<x floor> ... browsers=<b> cores=<c> load=<1-min load>``.
``--browsers 1`` puts every page in one browser (one thread), as before the pool.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dvoc_bench.core.rundir import TRIALS, read_jsonl

TASKS = ("click-checkboxes", "enter-text", "login-user")
"""The tasks timed by default: checkboxes, a field typed into, a form of two fields."""


def floor(reps: int) -> dict[str, float]:
    """Median seconds of one capture, one click, one page read and one hit test on a lone page."""
    from dvoc_bench.scenes.miniwob.dom import css_box_to_image
    from dvoc_bench.scenes.miniwob.source import MiniwobSource

    src = MiniwobSource()
    page = src.page("miniwob.click-test-2")
    try:
        dom = page.start(0, 300.0)
        el = next(e for e in dom.elements if e.tag == "button")
        p = css_box_to_image(el.box, src.options.scale).centre
        times: dict[str, list[float]] = {"capture_s": [], "click_s": [], "read_s": [], "hit_s": []}
        for _ in range(reps):
            for name, fn in (("capture_s", page.capture), ("read_s", page.read)):
                t = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t)
            t = time.perf_counter()
            page.hit(p, el.idx)
            times["hit_s"].append(time.perf_counter() - t)
            t = time.perf_counter()
            page.click(p)
            times["click_s"].append(time.perf_counter() - t)
            page.start(0, 300.0)  # the click ended the episode: a fresh one (not timed)
    finally:
        page.close()
        src.close()
    return {k: statistics.median(v) for k, v in times.items()}


def sweep(tasks: Sequence[str], method: str, seeds: int, inflight: int, out: Path) -> dict[str, Any]:
    """One ``experiment=episodes`` sweep; harness seconds per step from its records."""
    from dvoc_bench.runner.compose import quick_setup
    from dvoc_bench.runner.sweep import run_sweep

    ids = ",".join(f"miniwob.{t}" for t in tasks)
    setup = quick_setup([
        "experiment=episodes", f"tasks=[{ids}]", f"methods=[{method}]", f"repeats={seeds}",
        f"run.max_in_flight={inflight}", "run.quiet=true", "run.frames=none",
    ])  # fmt: skip
    t0 = time.perf_counter()
    run_sweep(setup, out)
    wall = time.perf_counter() - t0
    steps = [s for t in read_jsonl(out / TRIALS) for s in (t.get("episode") or {}).get("steps", [])]
    harness = [float(s.get("harness_s") or 0.0) for s in steps]
    return {
        "episodes": seeds * len(tasks),
        "steps": len(steps),
        "harness_s_per_step": sum(harness) / len(harness) if harness else float("nan"),
        "wall_s": wall,
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m dvoc_bench.bench episodes", description=__doc__.split("\n")[0]
    )
    p.add_argument("--tasks", nargs="+", default=list(TASKS), help="MiniWoB task names")
    p.add_argument("--seeds", type=int, default=5, help="episodes per task (page seeds 0..N-1)")
    p.add_argument("--method", default="oneshot", help="the grounding method (default oneshot)")
    p.add_argument("--inflight", type=int, nargs="+", default=[1, 4], help="episodes in flight (default 1 4)")
    p.add_argument("--floor-reps", type=int, default=15, help="repetitions of the floor's timings")
    p.add_argument("--browsers", type=int, default=None, help="browsers the pages are spread over")
    args = p.parse_args(argv)
    from dvoc_bench.scenes.miniwob import source

    if args.browsers is not None:
        source.BROWSERS = max(1, args.browsers)

    fl = floor(args.floor_reps)
    step_floor = fl["capture_s"] + fl["click_s"]
    print(f"floor (lone page, median of {args.floor_reps}): capture {fl['capture_s']:.3f} s + click "
          f"{fl['click_s']:.3f} s = {step_floor:.3f} s; page read {fl['read_s']:.3f} s, hit test "
          f"{fl['hit_s']:.3f} s")  # fmt: skip
    parts = []
    for k in args.inflight:
        with tempfile.TemporaryDirectory(prefix="dvoc-bench-episodes-") as tmp:
            r = sweep(args.tasks, args.method, args.seeds, k, Path(tmp) / "run")
        x = r["harness_s_per_step"] / step_floor
        print(f"{k} in flight: {r['episodes']} episodes, {r['steps']} steps, harness "
              f"{r['harness_s_per_step']:.3f} s/step ({x:.1f}x the floor), "
              f"wall {r['wall_s']:.1f} s")  # fmt: skip
        parts.append(f"inflight={k}:{r['harness_s_per_step']:.3f}:{x:.1f}x")
    load = os.getloadavg()[0]
    print(f"floor_s={step_floor:.3f} {' '.join(parts)} browsers={source.BROWSERS} cores={os.cpu_count()} "
          f"load={load:.1f}")  # fmt: skip
    return 0
