"""Benchmark of web scenes: ``python -m dvoc_bench.bench web [--repeats N] [--steps N]``. Figures only.

Prints, one ``key=value`` line per figure:

- ``launch_s``: driver + Chromium start (once per run);
- ``snapshot_<W>_ms``: one render of a page (fresh context: load, fonts, set-up, DOM measure, screenshot),
  median over ``--repeats`` renders after the first; ``snapshot_<W>_first_ms`` is the first one;
- ``step_web_median_ms`` / ``step_synth_median_ms``: harness cost of one DVOC step (overlay, PNG encode,
  prompt, request hash, frame store, step record) on the 1280x720 W4 snapshot and on the 800x600 S3
  scene, measured the same way in the same process (the page is rendered once, so a step costs the
  same kind of work as on a synthetic scene, on more pixels);
- ``probe_median_ms``: the DOM hit test of a trial's final point (``elementFromPoint``);
- ``verify_click_median_ms``: the optional real click (reload, set-up, click) per trial.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from dvoc_bench.benchmarks.harness import step_costs  # shared with the synthetic overhead benchmark

WEB_IDS = ("W1", "W2", "W3", "W4", "W5")


def _median_ms(xs: list[float]) -> float:
    return 1000 * statistics.median(xs)


def run(repeats: int = 3, steps: int = 200, probes: int = 100, clicks: int = 10) -> dict[str, float]:
    from dvoc_bench.core.geometry import Point
    from dvoc_bench.scenes import SceneRegistry, default_scenes_dir
    from dvoc_bench.scenes.sources import FolderTasks

    out: dict[str, float] = {}
    reg = SceneRegistry(default_scenes_dir(), options={"web": {"verify_click": True}})
    src = reg.source("web")
    assert isinstance(src, FolderTasks)
    web = src.backend
    try:
        t0 = time.perf_counter()
        web.browser.run(lambda s: None)
        out["launch_s"] = time.perf_counter() - t0
        for sid in WEB_IDS:
            t0 = time.perf_counter()
            reg.snapshot(sid)
            out[f"snapshot_{sid}_first_ms"] = 1000 * (time.perf_counter() - t0)
            task = web.scene(sid).task
            again = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                web.render(task)
                again.append(time.perf_counter() - t0)
            out[f"snapshot_{sid}_ms"] = _median_ms(again)
        out["step_web_median_ms"] = _median_ms(step_costs(reg.snapshot("W4"), steps))
        out["step_synth_median_ms"] = _median_ms(step_costs(reg.snapshot("S3"), steps))
        rng = np.random.default_rng(1)
        hit_times = []
        for _ in range(probes):
            p = Point(float(rng.uniform(0, 1279)), float(rng.uniform(0, 719)))
            t0 = time.perf_counter()
            web.browser.run(lambda s, p=p: _hit(s, web, p))
            hit_times.append(time.perf_counter() - t0)
        out["probe_median_ms"] = _median_ms(hit_times)
        target = reg.truth("W4").target_box.centre
        click_times = []
        for _ in range(clicks):
            t0 = time.perf_counter()
            reg.probe("W4", target)
            click_times.append(time.perf_counter() - t0)
        out["verify_click_median_ms"] = _median_ms(click_times[1:] or click_times) - out["probe_median_ms"]
    finally:
        reg.close()
    return out


def _hit(session, web, p):
    from dvoc_bench.scenes.web.page import hit_test

    task = web.scene("W4").task
    return hit_test(session.state[("live", "W4")], task, p)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dvoc_bench.bench web", description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="renders per page after the first")
    ap.add_argument("--steps", type=int, default=200, help="harness steps timed per scene")
    args = ap.parse_args(argv)
    for k, v in run(args.repeats, args.steps).items():
        print(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}")
    return 0
