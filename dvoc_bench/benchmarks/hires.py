"""``python -m dvoc_bench.bench hires``: the harness's cost per step of DVOC and zoom on a 3840x2160 screen
sent to a model with ``image.max_side: 1568``, against its own floor. Figures, not assertions.

The model answers instantly (a fixed reply: an offset of 200 px for DVOC, which stops after three reports
on oscillation; the centre of the image sent for zoom), so the wall time of a trial is the harness: the
methods' own code as a sweep runs it (``TrialEnv`` inline, frames stored in a run directory, the trial's
steps appended). The floor is the same work done by hand with nothing else: per DVOC step the overlay
drawn on the downscaled screenshot, its PNG encoded, stored and the step line written (plus the one
downscale of the screenshot per trial); per zoom step the crop cut and downscaled, encoded, stored and
written. Target: harness / floor <= 1.5 for each. Also shown: the floor of a naive DVOC that downscales
the 4K screenshot at every step (what the harness avoids by resizing once per scene).

Last line: ``dvoc_ms=<m> dvoc_floor_ms=<f> dvoc_ratio=<r> zoom_ms=<m> zoom_floor_ms=<f> zoom_ratio=<r>``.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from dvoc_bench.core.geometry import Box, Point, Size

SIZE = (3840, 2160)
LIMIT = 1568


def scene_4k():  # noqa: ANN201
    """A rendered 3840x2160 synthetic screen: a title bar, a grid of small icons, one small target."""
    from dvoc_bench.scenes.synthetic import render_synthetic

    els: list[dict[str, Any]] = [
        {"id": "bar", "kind": "rect", "box": [0, 0, SIZE[0] - 1, 40], "fill": [60, 64, 72], "label": "bar"}
    ]
    for k in range(96):
        x, y = 120 + (k % 16) * 230, 160 + (k // 16) * 330
        els.append({"id": f"i{k}", "kind": "rect", "box": [x, y, x + 60, y + 40], "fill": [90, 90, 200],
                    "text": f"app {k}", "text_at": [x + 4, y + 12], "font_size": 12,
                    "text_color": [255, 255, 255]})  # fmt: skip
    els.append(
        {"id": "t", "kind": "rect", "box": [3000, 1500, 3028, 1520], "fill": [230, 120, 40], "label": "t"}
    )
    spec = {"id": "BENCH4K", "name": "bench-4k", "difficulty": "hard", "size": list(SIZE),
            "background": [30, 32, 36], "instruction": "Click t", "target": "t", "elements": els}  # fmt: skip
    return render_synthetic(spec)


class InstantModel:
    """Answers at once: ``report_offset`` (200, 0) or ``click_at`` at the centre of the image sent."""

    name = "instant"
    simulated = True

    async def complete(self, req):  # noqa: ANN001, ANN201
        from dvoc_bench.models.base import Reply, ToolCall

        names = {t["function"]["name"] for t in req.tools}
        if "report_offset" in names:
            return Reply(None, [ToolCall("report_offset", '{"dx": 200, "dy": 0, "confidence": 1}')])
        c = req.image_size.centre
        return Reply(None, [ToolCall("click_at", f'{{"x": {c.x}, "y": {c.y}, "confidence": 1}}')])


def _spec(method: str, i: int):  # noqa: ANN202
    from dvoc_bench.core.records import TrialSpec

    dv = method == "dvoc"
    return TrialSpec(
        trial_key=f"b{method}{i}", experiment="bench", model="instant", model_id="instant", api_base=None,
        provider="p", simulated=True, coord_frame="pixel", task="BENCH4K", scene_hash="h", method=method,
        protocol="v1", alpha="decay" if dv else "-", overlay="full" if dv else "-",
        predict="relative" if dv else "-", start=[500.0 + i, 400.0] if dv else None,
        start_index=1, rep=0, seed=i, epsilon=30.0, conf_threshold=0.5, window=2, max_iterations=15,
        max_attempts=5, alpha_constant=0.5, zoom="2/2/256" if method == "zoom" else "-",
    )  # fmt: skip


def harness_ms(snap, method: str, trials: int) -> tuple[float, int]:  # noqa: ANN001
    """Median ms per step of ``method`` run as a sweep runs it (fresh environment per trial, so the
    one-per-scene downscale is paid by every trial), and the steps per trial."""
    from dvoc_bench.core.records import TrialRecord, to_jsonable
    from dvoc_bench.methods.common import TrialEnv
    from dvoc_bench.methods.registry import method_info
    from dvoc_bench.models.options import ImageOptions
    from dvoc_bench.runner.store import RunStore

    run = method_info(method).run
    per_step, steps = [], 0
    with tempfile.TemporaryDirectory() as d, RunStore(Path(d)) as store:
        for i in range(trials):
            env = TrialEnv(
                snap, InstantModel(), "instant@", store.save_shot, image=ImageOptions(max_side=LIMIT)
            )
            spec = _spec(method, i)
            t0 = time.perf_counter()
            res = asyncio.run(run(spec, env))
            rec = TrialRecord.build(spec, res, snap.target_box, 0.0, scene_kind="synthetic")
            store.append_trial(to_jsonable(rec), res.steps)
            steps = len(res.steps)
            per_step.append(1000 * (time.perf_counter() - t0) / steps)
    return statistics.median(per_step), steps


def floor_ms(snap, method: str, trials: int, steps: int, naive: bool = False) -> float:  # noqa: ANN001
    """Median ms per step of the bare work: resize + overlay + encode + store + write, by hand."""
    import json

    from dvoc_bench.draw.render import OverlayStyle, draw_overlay, encode_png
    from dvoc_bench.draw.sending import resize_image, view_of, zoom_window
    from dvoc_bench.runner.store import RunStore

    full = Size(*SIZE)
    style = OverlayStyle()
    out = []
    with tempfile.TemporaryDirectory() as d, RunStore(Path(d)) as store:
        for i in range(trials):
            t0 = time.perf_counter()
            lines = []
            if method == "dvoc":
                view = view_of(full, None, LIMIT)
                base = resize_image(snap.image, view)
                for k in range(steps):
                    if naive and k:
                        base = resize_image(snap.image, view)
                    p = view.to_sent(Point(500.0 + i + 100 * k, 400.0))
                    img = draw_overlay(base, p, mode="full", iteration=k, position_label="x", style=style)
                    sha = store.save_shot(encode_png(img, base=base))
                    lines.append({"frame_sha": sha, "k": k})
            else:
                crop = None
                for k in range(steps):
                    if k:
                        crop = zoom_window(
                            Point(1920.0 + i, 1080.0), crop or Box(0, 0, *SIZE), full, 2.0, 256
                        )
                    view = view_of(full, crop, LIMIT)
                    sha = store.save_shot(encode_png(resize_image(snap.image, view)))
                    lines.append({"frame_sha": sha, "k": k})
            store.append_trial({"trial_key": f"f{i}"}, [json.dumps(x) for x in lines])
            out.append(1000 * (time.perf_counter() - t0) / steps)
    return statistics.median(out)


def bench_hires(trials: int = 20) -> dict[str, float]:
    """Harness and floor trials alternate (one of each per round), so a change of machine load between
    the two does not tilt the ratio; medians over the rounds."""
    snap = scene_4k()
    r: dict[str, float] = {}
    for method in ("dvoc", "zoom"):
        harness_ms(snap, method, 2)  # warm up (imports, caches)
        hs, fs = [], []
        for _ in range(trials):
            ms, steps = harness_ms(snap, method, 1)
            hs.append(ms)
            fs.append(floor_ms(snap, method, 1, steps))
        r[f"{method}_steps_per_trial"] = steps
        ms, fl = statistics.median(hs), statistics.median(fs)
        r[f"{method}_ms"], r[f"{method}_floor_ms"], r[f"{method}_ratio"] = ms, fl, ms / fl
    r["dvoc_naive_floor_ms"] = floor_ms(snap, "dvoc", trials, int(r["dvoc_steps_per_trial"]), naive=True)
    return r
