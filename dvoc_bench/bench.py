"""Benchmarks (§12): ``python -m dvoc_bench.bench overhead|sweep``. Figures, not assertions.

- ``overhead``: harness cost of one DVOC step on an 800x600 scene, without the model: draw the overlay,
  encode the PNG, build the prompt and the request hash, store the frame and append the step line.
  Target: median < 10 ms. Last line: ``median_ms=<m> p90_ms=<p> n=<n>``.
- ``sweep``: wall time of the default quick sweep with the simulator (model time ~0), trials and steps
  per second. Last line: ``wall_s=<w> trials=<n> steps=<k> ms_per_step=<x>``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def bench_overhead(n: int = 300, task: str = "S3") -> dict[str, float]:
    from dvoc_bench.geometry import Frame, Point
    from dvoc_bench.models.base import ModelRequest
    from dvoc_bench.protocol import dvoc_prompt, position_label, tools_for
    from dvoc_bench.records import Step
    from dvoc_bench.render import OverlayStyle, draw_overlay, encode_png
    from dvoc_bench.scenes import SceneRegistry, default_scenes_dir
    from dvoc_bench.store import RunStore

    snap = SceneRegistry(default_scenes_dir()).snapshot(task)
    style = OverlayStyle()
    rng = np.random.default_rng(0)
    times = []
    with tempfile.TemporaryDirectory() as d, RunStore(Path(d)) as store:
        for i in range(n):
            draft = Point(float(rng.uniform(0, 799)), float(rng.uniform(0, 599)))
            t0 = time.perf_counter()
            img = draw_overlay(
                snap.image,
                draft,
                mode="full",
                iteration=i % 15,
                position_label=position_label(draft, Frame.NORM1000, snap.size),
                style=style,
            )
            png = encode_png(img)
            sha = store.save_frame(png)
            text = dvoc_prompt(
                "v1",
                instruction=snap.instruction,
                size=snap.size,
                frame=Frame.NORM1000,
                overlay="full",
                predict="relative",
                draft=draft,
                iteration=0,
                history=[],
            )
            req = ModelRequest(
                text=text,
                image_png=png,
                image_size=snap.size,
                tools=tools_for("offset"),
                scene_id=snap.scene_id,
                seed=i,
            )
            step = Step(
                trial_key=f"bench{i}",
                index=0,
                kind="verify",
                draft=draft.as_list(),
                true_dist_px=1.0,
                frame_sha=sha,
                request_sha=req.sha("bench"),
                prompt=text,
                reply_text=None,
            )
            store.append_trial({"trial_key": f"bench{i}"}, [step])
            times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return {"median_ms": statistics.median(times), "p90_ms": times[int(0.9 * len(times))], "n": n}


def bench_sweep() -> dict[str, float]:
    from dvoc_bench.cli_support import quick_setup
    from dvoc_bench.models.factory import build_model
    from dvoc_bench.store import RunStore, read_jsonl
    from dvoc_bench.sweep import plan, run_trials

    setup = quick_setup()
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        specs = plan(setup)
        with RunStore(Path(d)) as store:
            store.write_plan(specs)
            asyncio.run(run_trials(specs, setup, store, lambda m: build_model(m, setup.registry.truth)))
        wall = time.perf_counter() - t0
        steps = sum(1 for _ in read_jsonl(Path(d) / "steps.jsonl"))
    return {"wall_s": wall, "trials": len(specs), "steps": steps, "ms_per_step": 1000 * wall / max(steps, 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m dvoc_bench.bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("which", choices=["overhead", "sweep"])
    ap.add_argument("-n", type=int, default=300, help="steps to time (overhead)")
    args = ap.parse_args(argv)
    r = bench_overhead(args.n) if args.which == "overhead" else bench_sweep()
    print(" ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
