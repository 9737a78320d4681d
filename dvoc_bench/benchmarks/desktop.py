"""Benchmark of desktop scenes: ``python -m dvoc_bench.bench desktop [--steps N] [--probes N] [--clicks N]``.

Prints, one ``key=value`` line per figure:

- ``display_start_ms``: Xvfb start (once per run);
- ``snapshot_<D>_ms``: one scene start (runner, Tk, the script), the screen grab and the truth query;
- ``grab_median_ms``: one X11 grab of the whole 1280x800 screen;
- ``step_desktop_median_ms`` / ``step_synth_median_ms``: harness cost of one DVOC step (overlay, PNG encode,
  prompt, request hash, frame store, step record) on the 1280x800 D1 frame and on the 800x600 S3 scene,
  measured the same way in the same process (a desktop frame is grabbed once per run, so a step costs the
  same kind of work as on a synthetic scene, on more pixels);
- ``probe_median_ms``: the toolkit hit test of a trial's final point (a pipe round trip to the live app);
- ``probe_switch_median_ms``: the same when the previous probe was on another scene (that app withdrawn,
  this one mapped again: what interleaved trials of several scenes pay);
- ``verify_click_median_ms``: the optional real click per trial (fresh instance, pointer click, report).

Application tasks (``--apps A01,A09,...``, real programs, truth from AT-SPI; ``--apps ''``: none), one
line per task and figure (``app_<id>_<figure>``), then the median over the tasks (``app_<figure>``):

- ``display_ms``: the task's own Xvfb start; ``ready_ms``: the private D-Bus session, the application and
  its accessibility tree until the showing part is stable (the runner's own clock);
- ``elements``: how many accessibles the truth lists (showing, in the visible region);
- ``truth_ms``: one truth query as a trial pays it (the last read, kept while no change event came);
  ``read_ms``: one fresh read of the showing part of the tree; ``grab_ms``: the screen grab;
- ``hit_ms``: AT-SPI's hit test of a point (the target's centre) in the live application;
- ``app_failed``: tasks that did not start or show their target within 60 s (each named in a warning).

The default set is one task per bundled program, zenity's file chooser on ``/usr/share/doc`` (A26),
FeatherPad's Save As dialog (Qt's own file dialog, A29) and the longest list of ``gtk3-demo`` (its list box
demo, :data:`EXTRA`).
"""

from __future__ import annotations

import argparse
import logging
import math
import statistics
import time

import numpy as np

from dvoc_bench.benchmarks.harness import step_costs
from dvoc_bench.scenes.desktop.apps import AppSession, AppTask, load_task, task_from_mapping
from dvoc_bench.scenes.desktop.source import DesktopOptions
from dvoc_bench.scenes.sources import SceneError

log = logging.getLogger(__name__)

DESKTOP_IDS = ("D1", "D2", "D3", "D4")


def _median_ms(xs: list[float]) -> float:
    return 1000 * statistics.median(xs)


def run(steps: int = 200, probes: int = 100, clicks: int = 10) -> dict[str, float]:
    from dvoc_bench.core.geometry import Point
    from dvoc_bench.scenes import SceneRegistry, default_scenes_dir
    from dvoc_bench.scenes.sources import FolderTasks

    out: dict[str, float] = {}
    reg = SceneRegistry(default_scenes_dir(), options={"desktop": {"verify_click": True}})
    src = reg.source("desktop")
    assert isinstance(src, FolderTasks)
    desk = src.backend
    try:
        t0 = time.perf_counter()
        desk.display.start()
        out["display_start_ms"] = 1000 * (time.perf_counter() - t0)
        for sid in DESKTOP_IDS:
            t0 = time.perf_counter()
            reg.snapshot(sid)
            out[f"snapshot_{sid}_ms"] = 1000 * (time.perf_counter() - t0)
        grabs = []
        for _ in range(20):
            t0 = time.perf_counter()
            desk.display.grab()
            grabs.append(time.perf_counter() - t0)
        out["grab_median_ms"] = _median_ms(grabs)
        out["step_desktop_median_ms"] = _median_ms(step_costs(reg.snapshot("D1"), steps))
        out["step_synth_median_ms"] = _median_ms(step_costs(reg.snapshot("S3"), steps))
        rng = np.random.default_rng(1)
        reg.probe("D3", Point(0, 0))  # shows D3: the timed probes measure the query, not the switch
        hits = []
        for _ in range(probes):
            p = Point(float(rng.uniform(0, 1279)), float(rng.uniform(0, 799)))
            t0 = time.perf_counter()
            desk.scene("D3").instance.request(
                {"op": "hit", "x": int(p.x), "y": int(p.y), "target": "widget:."}
            )
            hits.append(time.perf_counter() - t0)
        out["probe_median_ms"] = _median_ms(hits)
        switch = []
        for k in range(probes // 4 * 4 or 4):  # each probe on another scene: withdraw one app, map the next
            sid = DESKTOP_IDS[k % 4]
            t0 = time.perf_counter()
            desk.hit_test(sid, reg.truth(sid).target_box.centre)
            switch.append(time.perf_counter() - t0)
        out["probe_switch_median_ms"] = _median_ms(switch)
        target = reg.truth("D1").target_box.centre
        times = []
        for _ in range(clicks):
            t0 = time.perf_counter()
            reg.probe("D1", target)
            times.append(time.perf_counter() - t0)
        out["verify_click_median_ms"] = _median_ms(times)
    finally:
        reg.close()
    return out


APP_IDS = "A01,A09,A11,A15,A18,A22,A26,A29,demo-listbox"
"""One task per bundled program (widget factory, zenity question / forms / list, gtk3-demo, icon browser),
zenity's file chooser, FeatherPad's Save As dialog, gtk3-demo's list box demo."""
EXTRA = {
    "demo-listbox": {
        "command": "gtk3-demo --run listbox", "target": "toggle button:More...",
        "wait_for": "toggle button:More...", "instruction": "Show more of the first message",
    },
}  # fmt: skip
"""Bench-only tasks (not in the bundled set): gtk3-demo's list box of messages, a long list of widgets."""
FIGURES = ("display", "ready", "elements", "truth", "read", "grab", "hit")


def app_figures(task: AppTask, options: DesktopOptions) -> dict[str, float]:
    """One task's figures (see the module docstring); seconds as ms, ``elements`` a count."""
    s = AppSession(task, options)
    try:
        t0 = time.perf_counter()
        s.display.grab()
        t1 = time.perf_counter()
        reply = s.request({"op": "truth", "targets": [task.target]})
        t2 = time.perf_counter()
        s.request({"op": "truth", "targets": [task.target], "fresh": True})
        t3 = time.perf_counter()
        box = reply["targets"].get(task.target)
        if box is None:
            raise SceneError(f"{task.id}: target {task.target!r} is not on screen")
        x, y = (box[0] + box[2]) // 2, (box[1] + box[3]) // 2
        t4 = time.perf_counter()
        s.request({"op": "hit", "x": x, "y": y, "target": task.target})
        t5 = time.perf_counter()
    finally:
        s.close()
    ms = {"truth": t2 - t1, "read": t3 - t2, "grab": t1 - t0, "hit": t5 - t4}
    return {
        "display": 1000 * s.display_s, "ready": 1000 * s.start_s, "elements": float(len(reply["elements"])),
        **{k: 1000 * v for k, v in ms.items()},
    }  # fmt: skip


def run_apps(ids: list[str], timeout_s: float = 60.0) -> dict[str, float]:
    from dvoc_bench.scenes import default_scenes_dir

    options = DesktopOptions(timeout_s=timeout_s)
    per: dict[str, dict[str, float]] = {}
    failed: list[str] = []
    for tid in ids:
        if tid in EXTRA:
            task = task_from_mapping({**EXTRA[tid], "id": tid}, f"bench {tid}", tid)
        else:
            task = load_task(default_scenes_dir() / "apps" / f"{tid}.yaml")
        try:
            per[tid] = app_figures(task, options)
        except SceneError as e:  # one task that fails is reported, the others are still measured
            log.warning("app %s failed: %s", tid, e)
            failed.append(tid)
    unit = {k: "" if k == "elements" else "_ms" for k in FIGURES}
    out = {f"app_{tid}_{k}{unit[k]}": v for tid, f in per.items() for k, v in f.items()}
    for k in FIGURES:
        out[f"app_{k}{unit[k]}"] = statistics.median(f[k] for f in per.values()) if per else math.nan
    out["app_failed"] = float(len(failed))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m dvoc_bench.bench desktop", description=__doc__.splitlines()[0]
    )
    ap.add_argument("--steps", type=int, default=200, help="harness steps timed per frame")
    ap.add_argument("--probes", type=int, default=100, help="toolkit hit tests timed")
    ap.add_argument("--clicks", type=int, default=10, help="real clicks timed")
    ap.add_argument("--apps", default=APP_IDS, help="application task ids timed (comma-separated; '' none)")
    args = ap.parse_args(argv)
    figures = run(args.steps, args.probes, args.clicks)
    ids = [t for t in args.apps.split(",") if t]
    if ids:
        figures.update(run_apps(ids))
    for k, v in figures.items():
        print(f"{k}={v:.2f}")
    return 0
