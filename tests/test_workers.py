"""The sweep's render pool (dvoc_bench/draw/workers.py): frames are made off the event loop, the records do
not
depend on it, and it is gone when the sweep ends."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path

import numpy as np
import pytest

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Point
from dvoc_bench.draw import workers
from dvoc_bench.draw.render import OverlayStyle, draw_overlay, encode_png
from dvoc_bench.draw.workers import FrameRenderer, default_workers, make_frame
from dvoc_bench.methods import dvoc as dvoc_module
from dvoc_bench.methods.common import TrialEnv
from dvoc_bench.runner import store as store_module
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.sweep import run_sweep
from dvoc_bench.scenes import SceneRegistry, default_scenes_dir
from tests.support import ShotSink

REG = SceneRegistry(default_scenes_dir())
TIMINGS = {"wall_s", "finished_at", "latency_s", "retry_wait_s"}
SOM_TIMINGS = {"detector_ms", "inference_ms"}


def render_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(workers.THREAD_PREFIX)]


def test_default_size_and_the_config_key():
    assert default_workers() == len(os.sched_getaffinity(0))
    for n, in_flight, size in ((None, 8, default_workers()), (None, 1, 0), (2, 1, 2), (0, 8, 0)):
        with FrameRenderer(n, in_flight=in_flight) as pool:
            assert pool.workers == size  # one trial at a time: nothing to overlap, so inline by default
    assert quick_setup(["run.render_workers=0"]).settings.run.render_workers == 0
    assert quick_setup().settings.run.render_workers is None
    with pytest.raises(ConfigError, match="run.render_workers"):
        quick_setup(["run.render_workers=-1"])


def test_env_render_draws_encodes_and_stores_in_the_pool_thread():
    where: list[str] = []

    def draw(image: np.ndarray, value: int) -> np.ndarray:
        where.append(threading.current_thread().name)
        out = image.copy()
        out[0, 0] = value
        return out

    async def go(renderer: FrameRenderer) -> tuple[str, object, object, ShotSink]:
        sink = ShotSink()
        env = TrialEnv(REG.snapshot("S2"), None, "m@", sink, renderer=renderer)
        shown = await env.render(draw, 7)
        clean = await env.clean_frame()
        assert await env.clean_frame() is clean  # encoded and stored once per environment
        return threading.current_thread().name, shown, clean, sink

    with FrameRenderer(1) as pool:
        loop_thread, shown, clean, sink = asyncio.run(go(pool))
    assert where == ["dvoc-render_0"] and loop_thread != where[0]
    assert shown.image[0, 0].tolist() == [7, 7, 7] and shown.png == encode_png(shown.image)
    assert clean.image is REG.snapshot("S2").image and clean.png == encode_png(clean.image)
    assert set(sink.frames) == {shown.sha, clean.sha} and sink.frames[shown.sha] == shown.png
    where.clear()
    loop_thread, *_ = asyncio.run(go(FrameRenderer(0)))  # 0: inline, on the loop's own thread
    assert where == [loop_thread]


def test_concurrent_frames_are_the_inline_frames():
    """Many frames at once on two screenshots (fonts and the encoder's cache shared by the threads)."""
    style = OverlayStyle()
    rng = np.random.default_rng(3)
    jobs = [
        (REG.snapshot(task).image, Point(*rng.uniform(-40, 840, 2)), mode, i)
        for i in range(12)
        for task in ("S3", "S6")
        for mode in ("full", "crosshair", "none")
    ]

    def one(base, p, mode, i):
        return make_frame(
            base, draw_overlay, (p,), dict(mode=mode, iteration=i, position_label=f"({i})", style=style)
        )

    async def all_at_once():
        with FrameRenderer(2) as pool:
            return await asyncio.gather(*(pool.run(one, *j) for j in jobs))

    for (image, png), job in zip(asyncio.run(all_at_once()), jobs, strict=True):
        ref_image, ref_png = one(*job)
        assert png == ref_png and np.array_equal(image, ref_image)


def test_a_closed_pool_refuses_work():
    pool = FrameRenderer(1)
    pool.close()
    pool.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(pool.run(int))


def _records(run_dir: Path) -> tuple[dict, dict, set[str]]:
    def rows(name: str) -> list[dict]:
        out = []
        for line in (run_dir / name).read_text().splitlines():
            r = {k: v for k, v in json.loads(line).items() if k not in TIMINGS}
            if r.get("som"):
                r["som"] = {k: v for k, v in r["som"].items() if k not in SOM_TIMINGS}
            out.append(r)
        return out

    trials = {r["trial_key"]: r for r in rows("trials.jsonl")}
    steps = {(r["trial_key"], r["index"]): r for r in rows("steps.jsonl")}
    return trials, steps, {p.name for p in (run_dir / "frames").iterdir()}


def test_a_sweep_renders_in_the_pool_gives_the_inline_records_and_ends_the_pool(tmp_path, monkeypatch):
    seen: dict[str, set[str]] = {"draw": set(), "encode": set(), "save": set()}

    def spy(kind, fn):
        def wrapped(*a, **k):
            seen[kind].add(threading.current_thread().name)
            return fn(*a, **k)

        return wrapped

    monkeypatch.setattr(dvoc_module, "draw_overlay", spy("draw", draw_overlay))
    monkeypatch.setattr(workers, "encode_png", spy("encode", encode_png))
    monkeypatch.setattr(store_module.RunStore, "save_shot", spy("save", store_module.RunStore.save_shot))
    over = [
        "models=[sim-gemma-4-26b]",
        "methods=[dvoc,oneshot,som,som_dvoc]",
        "protocols=[v1,paper]",
        "overlays=[full,none]",
        "tasks=[S1,S4]",
        "starts=random:2",
        "run.max_in_flight=8",
    ]
    during: list[int] = []
    pooled = run_sweep(
        quick_setup([*over, "run.render_workers=2"]),
        tmp_path / "pool",
        on_done=lambda line: during.append(len(render_threads())),
    )
    assert max(during) == 2 and not render_threads()  # the pool ran during the sweep and ended with it
    for kind, names in seen.items():
        assert names and all(n.startswith("dvoc-render") for n in names), (kind, names)

    for names in seen.values():
        names.clear()
    inline = run_sweep(quick_setup([*over, "run.render_workers=0"]), tmp_path / "inline")
    assert seen["draw"] == seen["encode"] == seen["save"] == {"MainThread"}
    assert len(pooled.trials) == len(inline.trials) > 0
    a, b = _records(tmp_path / "pool"), _records(tmp_path / "inline")
    assert len(a[1]) > len(a[0])  # steps were made
    assert a[0] == b[0] and a[1] == b[1] and a[2] == b[2]
