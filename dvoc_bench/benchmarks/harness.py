"""Benchmarks: ``python -m dvoc_bench.bench overhead|sweep|scheduler|loader|hires``. Figures, not
assertions. (``readme`` is not a benchmark: it prints the numbers README.md and docs quote, generated,
:mod:`dvoc_bench.benchmarks.readme_numbers`.)

- ``overhead``: harness cost of one DVOC step on an 800x600 scene, without the model: draw the overlay,
  encode the PNG, build the prompt and the request hash, store the frame and append the step line.
  Target: median < 10 ms. Last line: ``median_ms=<m> p90_ms=<p> n=<n>``.
- ``sweep``: wall time of the default quick sweep with the simulator (model time ~0), trials and steps
  per second. Last line: ``wall_s=<w> trials=<n> steps=<k> ms_per_step=<x>``.
- ``scheduler``: two simulated providers behind server-side rate limits (1200/min and 600/min: the
  paper-era 120/min and 60/min scaled x10 to keep it short), a few hundred calls each, the gates configured
  at the servers' rates. Reports wall / lower bound (max over providers of calls / rate), 429s received and
  calls wasted (failed attempts). Target: ratio <= 1.1 and zero 429s. Then a 1,000-trial simulated sweep
  with 50 ms per call, one trial at a time: harness overhead = (wall - time inside model calls) / wall
  (target < 10 %; the simulator's own compute counts as model time), and the same sweep at 8 in flight
  against its ideal (calls x 50 ms / 8; target <= 1.25 on an idle 2-core machine: frames are drawn and
  encoded in the render pool, :mod:`dvoc_bench.draw.workers`). Last line:
  ``ratio=<wall/lower bound> n429=<count> wasted=<calls> inflight8_ratio=<wall/ideal> cores=<n>
  load=<1-min load average before the 8-in-flight run>``.
- ``inflight``: only that 8-in-flight sweep (a minute instead of three), e.g. to compare
  ``--set run.render_workers=0`` (frames drawn on the event loop) with the default pool. Last line:
  ``inflight8_ratio=<wall/ideal> cores=<n> load=<1-min load average>``.
- ``dataset``: peak RSS of a ``run.frames=sent`` ScreenSpot-Pro sweep over a 4K fixture at 50 and at 500
  samples, and the frame bytes per sample (:mod:`dvoc_bench.benchmarks.dataset`; target: growth <= 200 MB).
  Last line: ``rss50_mb=<a> rss500_mb=<b> growth_mb=<b-a> frame_mb_per_sample=<c>``.
- ``overlay``: the overlay style sweep of the simulator (:mod:`dvoc_bench.benchmarks.overlay`): five crosshair
  colours red to green, five arm lengths and five bar widths, Gemini-like DVOC on S1-S6; success with
  clustered 95 % intervals, and the small corner (arm 5 / bar 1 against arm 10 / bar 2). Last line:
  ``max_step_colour_pp=<x> max_step_size_pp=<y> max_step_width_pp=<z> max_step_corner_pp=<c>``
  (neighbouring conditions; target <= 15 on the three axes; the corner is reported).
- ``loader``: the run loader (target: 100,000 steps load in < 5 s). A small simulated sweep, its records
  replicated (fresh trial keys) until the run holds ``--steps`` step lines, then ``load_runs`` timed: the
  first parse (which also writes the parquet cache), a parse without cache, and the cached load. Last
  line: ``trials=<t> steps=<n> parse_s=<a> parse_and_cache_s=<b> cached_s=<c>``.
- ``hires``: harness cost per step of DVOC and zoom on a 4K screen sent at 1568 px, against its floor
  (resize + overlay + encode + write; :mod:`dvoc_bench.benchmarks.hires`). Target: ratio <= 1.5.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np


def step_costs(snapshot, n: int, seed: int = 0) -> list[float]:
    """Seconds per harness step on ``snapshot`` (no model), drafts uniform over the image."""
    from dvoc_bench.core.geometry import Frame, Point
    from dvoc_bench.core.records import Step
    from dvoc_bench.draw.render import OverlayStyle, draw_overlay, encode_png
    from dvoc_bench.models.base import ModelRequest
    from dvoc_bench.protocol import get_protocol, position_label, tools_for
    from dvoc_bench.runner.store import RunStore

    size, style = snapshot.size, OverlayStyle()
    rng = np.random.default_rng(seed)
    out = []
    with tempfile.TemporaryDirectory() as d, RunStore(Path(d)) as store:
        for i in range(n):
            draft = Point(float(rng.uniform(0, size.width - 1)), float(rng.uniform(0, size.height - 1)))
            t0 = time.perf_counter()
            label = position_label(draft, Frame.NORM1000, size)
            img = draw_overlay(
                snapshot.image, draft, mode="full", iteration=i % 15, position_label=label, style=style
            )
            png = encode_png(img, base=snapshot.image)
            sha = store.save_shot(png)
            text = get_protocol("v1").dvoc_prompt(
                instruction=snapshot.instruction,
                size=size,
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
                image_size=size,
                tools=tools_for("offset"),
                scene_id=snapshot.scene_id,
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
            out.append(time.perf_counter() - t0)
    return out


def bench_overhead(n: int = 300, task: str = "S3") -> dict[str, float]:
    from dvoc_bench.scenes import SceneRegistry, default_scenes_dir

    times = sorted(1000 * t for t in step_costs(SceneRegistry(default_scenes_dir()).snapshot(task), n))
    return {"median_ms": statistics.median(times), "p90_ms": times[int(0.9 * len(times))], "n": n}


def bench_sweep() -> dict[str, float]:
    from dvoc_bench.core.rundir import STEPS, read_jsonl
    from dvoc_bench.runner.compose import quick_setup
    from dvoc_bench.runner.sweep import run_sweep

    setup = quick_setup()
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        res = run_sweep(setup, Path(d))
        wall = time.perf_counter() - t0
        steps = sum(1 for _ in read_jsonl(Path(d) / STEPS))
    n = len(res.specs)
    return {"wall_s": wall, "trials": n, "steps": steps, "ms_per_step": 1000 * wall / max(steps, 1)}


def _two_provider_models(d: Path) -> Path:
    import yaml

    from dvoc_bench.models.config import default_conf_dir

    base = yaml.safe_load((default_conf_dir() / "model" / "sim-ideal.yaml").read_text())
    out = d / "models"
    out.mkdir()
    for name, provider in (("sim-fast", "bench-fast"), ("sim-slow", "bench-slow")):
        cfg = dict(base, name=name, provider=provider, model_id=f"sim/{name}")
        (out / f"{name}.yaml").write_text(yaml.safe_dump(cfg))
    return out


def bench_scheduler() -> dict[str, float]:
    from dvoc_bench.models.factory import build_model
    from dvoc_bench.models.faults import Faults, FaultyModel
    from dvoc_bench.runner.compose import quick_setup
    from dvoc_bench.runner.sweep import run_sweep

    rates = {"bench-fast": 1200.0, "bench-slow": 600.0}
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as d:
        models = _two_provider_models(Path(d))
        setup = quick_setup(
            [
                f"paths.models={models}",
                "models=[sim-fast,sim-slow]",
                "methods=[dvoc,oneshot]",
                "repeats=2",
                "run.max_in_flight=32",
                *(f"+scheduler.providers.{p}.rpm={r:g}" for p, r in rates.items()),
            ]
        )
        servers: dict[str, FaultyModel] = {}

        def factory(m, gate):
            # the server enforces the same rate over a 1 s window (the per-minute quota scaled down)
            f = Faults(rpm=rates[m.provider] / 60.0, window_s=1.0, retry_after_s=1.0)
            servers[m.provider] = FaultyModel(build_model(m, setup.registry.truth), f)
            return gate(servers[m.provider])

        t0 = time.perf_counter()
        gates = run_sweep(setup, Path(d) / "run", factory).gates
        wall = time.perf_counter() - t0
        sent = {p: g.stats.sent for p, g in gates.items()}
        lower = max((sent[p] - 1) * 60.0 / rates[p] for p in rates)
        out.update(calls=sum(sent.values()), lower_bound_s=lower, wall_s=wall)
        n429 = sum(s.counts["429"] for s in servers.values())
        wasted = sum(g.stats.failed for g in gates.values())

        # harness overhead: 1,000 trials, 50 ms per call, one trial at a time (the harness's own time is
        # then exactly wall - time inside model calls); and the same at 8 in flight for throughput
        one = bench_inflight(1, Path(d))
        out.update(
            trials_1k=one["trials_1k"],
            calls_1k=one["calls_1k"],
            wall_1k_s=one["wall_s"],
            overhead_pct=100 * (one["wall_s"] - one["in_calls_s"]) / one["wall_s"],
        )
        eight = bench_inflight(8, Path(d))
        out.update(wall_1k_8flight_s=eight["wall_s"], ideal_1k_8flight_s=eight["ideal_s"])
    out.update(ratio=wall / lower, n429=n429, wasted=wasted)
    out.update(inflight8_ratio=eight["inflight8_ratio"], cores=eight["cores"], load=eight["load"])
    return out


def make_loader_run(run_dir: Path, n_steps: int) -> int:
    """A run directory with at least ``n_steps`` step lines (replicated from a real simulated sweep)."""
    from dvoc_bench.core.rundir import SHOTS, STEPS, TRIALS, dumps, read_jsonl
    from dvoc_bench.runner.compose import quick_setup
    from dvoc_bench.runner.sweep import run_sweep

    seed_dir = run_dir.parent / "seed"
    run_sweep(quick_setup(["smoke=true"]), seed_dir)
    trials = list(read_jsonl(seed_dir / TRIALS))
    steps = list(read_jsonl(seed_dir / STEPS))
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / SHOTS).symlink_to(seed_dir / SHOTS, target_is_directory=True)
    written, copy = 0, 0
    with (run_dir / TRIALS).open("w") as tf, (run_dir / STEPS).open("w") as sf:
        while written < n_steps:
            for t in trials:
                key = f"{t['trial_key']}-{copy}"
                tf.write(dumps({**t, "trial_key": key}) + "\n")
            for st in steps:
                sf.write(dumps({**st, "trial_key": f"{st['trial_key']}-{copy}"}) + "\n")
                written += 1
            copy += 1
    return written


def bench_loader(n_steps: int = 100_000) -> dict[str, float]:
    from dvoc_bench.analysis import load_runs

    with tempfile.TemporaryDirectory() as d:
        run = Path(d) / "run"
        n = make_loader_run(run, n_steps)
        t0 = time.perf_counter()
        r = load_runs(run)  # parse + write the cache
        t1 = time.perf_counter()
        load_runs(run, cache=False)  # parse only
        t2 = time.perf_counter()
        r2 = load_runs(run)  # cached
        t3 = time.perf_counter()
    assert len(r2.steps) == len(r.steps) == n
    return {
        "trials": len(r.trials),
        "steps": n,
        "parse_s": t2 - t1,
        "parse_and_cache_s": t1 - t0,
        "cached_s": t3 - t2,
    }


def bench_inflight(n_flight: int = 8, d: Path | None = None, overrides: list[str] | None = None) -> dict:
    """The 1,000-trial simulated sweep (dvoc + oneshot, 50 ms per call) at ``n_flight`` trials in flight:
    wall time, time inside model calls, the ideal ``calls x 50 ms / n_flight`` and their ratio."""
    from dvoc_bench.core.rundir import STEPS, read_jsonl
    from dvoc_bench.draw.workers import default_workers
    from dvoc_bench.models.factory import build_model
    from dvoc_bench.models.simulator import SimulatedModel
    from dvoc_bench.runner.compose import quick_setup
    from dvoc_bench.runner.sweep import run_sweep

    setup = quick_setup(
        [
            "models=[sim-ideal]",
            "methods=[dvoc,oneshot]",
            "starts=random:84",
            f"run.max_in_flight={n_flight}",
            *(overrides or []),
        ]
    )

    def slow(m, gate):  # sim-ideal's own latency: 50 ms from each call's start, its looking included
        model = build_model(m, setup.registry.truth)
        assert isinstance(model, SimulatedModel)  # sim-ideal
        model.profile = model.profile.model_copy(update={"latency_s": 0.05})
        return gate(model)

    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(d or tmp) / f"run-{n_flight}"
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        specs = run_sweep(setup, run_dir, slow).specs
        wall = time.perf_counter() - t0
        steps = list(read_jsonl(run_dir / STEPS))
    ideal = len(steps) * 0.05 / n_flight
    return {
        "trials_1k": len(specs),
        "calls_1k": len(steps),
        "wall_s": wall,
        "in_calls_s": sum(s["latency_s"] for s in steps),
        "ideal_s": ideal,
        f"inflight{n_flight}_ratio": wall / ideal,
        "cores": default_workers(),
        "load": load,
    }


def _dataset(overrides: list[str]) -> dict:
    from dvoc_bench.benchmarks.dataset import bench_dataset

    return bench_dataset(extra=overrides)


def _hires() -> dict[str, float]:
    from dvoc_bench.benchmarks.hires import bench_hires

    return bench_hires()


def _overlay(repeats: int) -> dict[str, float]:
    from dvoc_bench.benchmarks.overlay import bench_overlay

    return bench_overlay(repeats)


def main(argv: list[str] | None = None, also: list[str] | None = None) -> int:
    """The harness benchmarks' command line; ``also``: the door's other script names (for ``--help``)."""
    ap = argparse.ArgumentParser(
        prog="python -m dvoc_bench.bench",
        description=__doc__,
        epilog=f"Scripts with their own options: {', '.join(also or [])} (NAME --help).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "which",
        choices=[
            "overhead",
            "sweep",
            "scheduler",
            "inflight",
            "loader",
            "dataset",
            "hires",
            "overlay",
            "readme",
        ],
    )
    ap.add_argument("--repeats", type=int, default=6, help="repeats per start point (overlay)")
    ap.add_argument("-n", type=int, default=300, help="steps to time (overhead)")
    ap.add_argument("--steps", type=int, default=100_000, help="step lines to load (loader)")
    ap.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="config override (inflight)"
    )
    args = ap.parse_args(argv)
    if args.which == "readme":  # not a timing: the numbers README.md and docs quote, regenerated
        from dvoc_bench.benchmarks.readme_numbers import blocks, render

        print(render(blocks()), end="")
        return 0
    fns = {
        "overhead": lambda: bench_overhead(args.n),
        "sweep": bench_sweep,
        "scheduler": bench_scheduler,
        "loader": lambda: bench_loader(args.steps),
        "inflight": lambda: bench_inflight(8, overrides=args.set),
        "dataset": lambda: _dataset(args.set),
        "hires": _hires,
        "overlay": lambda: _overlay(args.repeats),
    }
    r = fns[args.which]()
    last = ("ratio", "n429", "wasted", "inflight8_ratio", "cores", "load")
    body = {k: v for k, v in r.items() if k not in last}
    fmt = lambda items: " ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in items)  # noqa: E731
    if body:
        print(fmt(body.items()))
    if any(k in r for k in last):
        print(fmt((k, r[k]) for k in last if k in r))
    return 0
