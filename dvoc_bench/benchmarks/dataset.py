"""``python -m dvoc_bench.bench dataset``: memory and frame bytes of a dataset sweep at 4K.

Builds a 500-sample ScreenSpot-Pro fixture of 3840x2160 screenshots (:mod:`dvoc_bench.scenes.dataset_fixture`:
125 screenshot files, 4 targets each), then runs ``experiment=screenspot_pro`` (oneshot, and dvoc started
from the one-shot answer) with one simulated model and ``run.frames=sent`` twice, each in its own
process: on a 50-sample stratified draw (``dataset.limit=50``) and on all 500. Reports each run's peak
RSS (``ru_maxrss`` of the process), wall time, trials and frame bytes per sample. Target: peak RSS at 500
<= peak RSS at 50 + 200 MB (the screenshots are decoded lazily and freed task by task). Last line:
``rss50_mb=<a> rss500_mb=<b> growth_mb=<b-a> frame_mb_per_sample=<c>``.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SAMPLES = 500
SMALL = 50


def child(root: str, limit: int, run_dir: str, model: str, extra: list[str]) -> dict:
    """One sweep in this process; its peak RSS, wall time, trials and frame bytes."""
    from dvoc_bench.runner.compose import quick_setup
    from dvoc_bench.runner.sweep import run_sweep

    overrides = ["experiment=screenspot_pro", f"dataset.root={root}", f"models=[{model}]", "run.frames=sent",
                 "run.quiet=true", *extra]  # fmt: skip
    if limit < SAMPLES:
        overrides.append(f"dataset.limit={limit}")
    t0 = time.perf_counter()
    res = run_sweep(quick_setup(overrides), run_dir)
    samples = len({t["task"] for t in res.trials})
    return {
        "samples": samples,
        "trials": len(res.trials),
        "ok": sum(t["status"] == "ok" for t in res.trials),
        "wall_s": round(time.perf_counter() - t0, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "frame_bytes": res.shot_bytes,
        "frame_mb_per_sample": round(res.shot_bytes / max(samples, 1) / 1e6, 3),
        "frames_line": res.shots_line,
    }


def bench_dataset(
    model: str = "sim-gemma-4-26b", extra: list[str] | None = None, keep: str | None = None
) -> dict:
    """Build the fixture, run the two sweeps in child processes, return their figures."""
    from dvoc_bench.scenes.dataset_fixture import write_fixture

    with tempfile.TemporaryDirectory(prefix="dvoc-bench-dataset-") as tmp:
        d = Path(keep) if keep else Path(tmp)
        root = d / "ScreenSpot-Pro"
        t0 = time.perf_counter()
        if not (root / "annotations").is_dir():
            write_fixture(root, "screenspot_pro", (3840, 2160), screens=125, per_screen=4)
        print(
            f"fixture: {SAMPLES} samples at 3840x2160 in {time.perf_counter() - t0:.1f} s ({root})",
            flush=True,
        )
        out: dict = {}
        for n in (SMALL, SAMPLES):
            cmd = [sys.executable, "-m", "dvoc_bench.benchmarks.dataset", "--child", str(root), str(n),
                   str(d / f"run{n}"), model, *(extra or [])]  # fmt: skip
            r = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if r.returncode != 0:
                raise RuntimeError(f"the {n}-sample sweep failed: {r.stderr[-2000:]}")
            fig = json.loads(r.stdout.strip().splitlines()[-1])
            print(f"{n} samples: {json.dumps(fig)}", flush=True)
            out[n] = fig
    return {
        "rss50_mb": out[SMALL]["peak_rss_mb"],
        "rss500_mb": out[SAMPLES]["peak_rss_mb"],
        "growth_mb": round(out[SAMPLES]["peak_rss_mb"] - out[SMALL]["peak_rss_mb"], 1),
        "frame_mb_per_sample": out[SAMPLES]["frame_mb_per_sample"],
    }


if __name__ == "__main__":
    if len(sys.argv) >= 6 and sys.argv[1] == "--child":
        _, _, root, n, run_dir, model, *rest = sys.argv
        print(json.dumps(child(root, int(n), run_dir, model, rest)))
        sys.exit(0)
    sys.exit("use: python -m dvoc_bench.bench dataset")
