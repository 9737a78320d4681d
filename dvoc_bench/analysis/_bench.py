"""Benchmark of the run loader (issue target: 100,000 steps load in < 5 s). Figures, not assertions.

``python -m dvoc_bench.analysis._bench [--steps 100000]`` runs a small simulated sweep, replicates its
records (fresh trial keys) until the run holds ``--steps`` step lines, then times ``load_runs``: the first
parse (which also writes the parquet cache), a parse without cache, and the cached load. Last line:
``steps=<n> parse_s=<a> parse_and_cache_s=<b> cached_s=<c>``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path


def make_run(run_dir: Path, n_steps: int) -> int:
    """A run directory with at least ``n_steps`` step lines (replicated from a real simulated sweep)."""
    from dvoc_bench.cli_support import quick_setup
    from dvoc_bench.sweep import run_sweep

    seed_dir = run_dir.parent / "seed"
    run_sweep(quick_setup(["smoke=true"]), seed_dir)
    trials = [json.loads(x) for x in (seed_dir / "trials.jsonl").read_text().splitlines() if x.strip()]
    steps = [json.loads(x) for x in (seed_dir / "steps.jsonl").read_text().splitlines() if x.strip()]
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "frames").symlink_to(seed_dir / "frames", target_is_directory=True)
    written, copy = 0, 0
    with (run_dir / "trials.jsonl").open("w") as tf, (run_dir / "steps.jsonl").open("w") as sf:
        while written < n_steps:
            for t in trials:
                key = f"{t['trial_key']}-{copy}"
                tf.write(json.dumps({**t, "trial_key": key}) + "\n")
            for s in steps:
                sf.write(json.dumps({**s, "trial_key": f"{s['trial_key']}-{copy}"}) + "\n")
                written += 1
            copy += 1
    return written


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m dvoc_bench.analysis._bench")
    p.add_argument("--steps", type=int, default=100_000)
    args = p.parse_args(argv)
    from dvoc_bench.analysis import load_runs

    with tempfile.TemporaryDirectory() as d:
        run = Path(d) / "run"
        n = make_run(run, args.steps)
        t0 = time.perf_counter()
        r = load_runs(run)  # parse + write the cache
        t1 = time.perf_counter()
        load_runs(run, cache=False)  # parse only
        t2 = time.perf_counter()
        r2 = load_runs(run)  # cached
        t3 = time.perf_counter()
        assert len(r2.steps) == len(r.steps) == n
        print(f"{len(r.trials)} trials, {n} steps")
        print(f"steps={n} parse_s={t2 - t1:.2f} parse_and_cache_s={t1 - t0:.2f} cached_s={t3 - t2:.2f}")


if __name__ == "__main__":
    main()
