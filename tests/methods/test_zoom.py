"""High-resolution screens and zoom, end to end: a 3840x2160 fixture (a test-only task source) sent to the
ideal simulator behind a 1568-px input limit, in each answer frame, with one-shot, DVOC and zoom."""

from __future__ import annotations

import importlib
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from dvoc_bench.core.geometry import Box, Point, Size
from dvoc_bench.draw.render import decode_png, find_crosshair
from dvoc_bench.draw.sending import View, zoom_window
from dvoc_bench.models.config import default_conf_dir
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.sweep import plan, run_sweep
from dvoc_bench.scenes.sources import unregister_source

FRAMES = ("pixel", "norm1000", "norm1")
SENT = [1568, 882]


@pytest.fixture(scope="module")
def hires():
    name = "tests.scenes.hires"
    already = name in sys.modules
    mod = importlib.import_module(name)  # importing the file registers the source
    if already:
        unregister_source(mod.NAME)
        importlib.reload(mod)
    yield mod
    unregister_source(mod.NAME)


@pytest.fixture(scope="module")
def run(hires, tmp_path_factory):
    """One sweep: 6 samples x 4 methods x 3 models (sim-ideal-1568 answering in each frame)."""
    root = tmp_path_factory.mktemp("hires")
    ids = hires.write_fixture(root / "scenes")
    models = root / "models"
    models.mkdir()
    base = yaml.safe_load((default_conf_dir() / "model" / "sim-ideal-1568.yaml").read_text())
    for frame in FRAMES:
        cfg = {**base, "name": f"ideal-1568-{frame}", "coord_frame": frame}
        cfg["sim"] = {**base["sim"], "frames": {frame: 1.0}}
        (models / f"ideal-1568-{frame}.yaml").write_text(yaml.safe_dump(cfg))
    shutil.copy(default_conf_dir() / "model" / "sim-ideal-1568.yaml", models)
    setup = quick_setup(
        [f"paths.scenes={root / 'scenes'}", f"paths.models={models}", f"tasks=[{','.join(ids)}]",
         f"models=[{','.join(f'ideal-1568-{f}' for f in FRAMES)}]", "methods=[oneshot,dvoc,zoom,zoom_dvoc]",
         "starts=random:1", "repeats=1", "zoom.rounds=2", "zoom.factor=2", "zoom.min_crop=256"]
    )  # fmt: skip
    res = run_sweep(setup, root / "run")
    trials = [json.loads(line) for line in (root / "run" / "trials.jsonl").open()]
    steps = [json.loads(line) for line in (root / "run" / "steps.jsonl").open()]
    return hires, res, trials, steps, root / "run"


def _frame(run_dir: Path, sha: str) -> np.ndarray:
    return decode_png(next(run_dir.joinpath("frames").rglob(f"{sha}.png")).read_bytes())


@pytest.mark.e2e
def test_every_method_hits_every_4k_sample_in_every_frame(run):
    hires, res, trials, _, _ = run
    assert res.counts == {"ok": 72}
    got = {(t["model"].rsplit("-", 1)[1], t["method"], t["task"]): t for t in trials}
    assert len(got) == 72
    for (frame, method, task), t in got.items():
        box = Box(*hires.target_box(int(task[1:])))
        assert box.contains(Point(*t["final_point"])), (frame, method, task, t["final_point"], box)
        assert t["hit"] is True


def test_steps_record_the_scale_and_size_sent_and_answers_map_back(run):
    _, _, trials, steps, run_dir = run
    by_key = {t["trial_key"]: t for t in trials}
    full = View(Box(0, 0, 3840, 2160), Size(*SENT), Size(3840, 2160))
    for s in steps:
        t = by_key[s["trial_key"]]
        if s["crop"] is None:  # the whole screen: downscaled to the limit
            assert s["sent_size"] == SENT and s["image_scale"] == pytest.approx(1568 / 3840)
            assert _frame(run_dir, s["frame_sha"]).shape[:2] == (882, 1568)
            assert "1568×882 pixels" in s["prompt"] and "3840" not in s["prompt"]  # the prompt states it
        if t["method"] == "oneshot":  # the raw answer, read in its frame on the image sent, maps back
            raw = s["values_raw"]
            k = {"pixel": 1.0, "norm1000": 1000.0, "norm1": 1.0}[t["coord_frame"]]
            q = Point(raw["x"], raw["y"])
            if t["coord_frame"] != "pixel":
                q = Point(raw["x"] * (SENT[0] - 1) / k, raw["y"] * (SENT[1] - 1) / k)
            want = full.to_original(q)
            assert (s["values_px"]["x"], s["values_px"]["y"]) == pytest.approx((want.x, want.y), abs=1e-6)


def test_the_dvoc_overlay_is_drawn_in_sent_pixels_and_stays_whole(run):
    _, _, trials, steps, run_dir = run
    dvoc = {t["trial_key"] for t in trials if t["method"] == "dvoc"}
    dv = [s for s in steps if s["kind"] == "verify" and s["trial_key"] in dvoc]
    assert dv
    for s in dv[:6]:
        img = _frame(run_dir, s["frame_sha"])
        assert img.shape[:2] == (882, 1568)
        c = find_crosshair(img, width=3)
        want = Point(s["draft"][0] * 1568 / 3840, s["draft"][1] * 882 / 2160)
        assert c is not None and c.dist(want) <= 1.5, (c, want)
        red = (img[..., 0] == 255) & (img[..., 1] == 0) & (img[..., 2] == 0)
        assert red.sum() >= 2 * 31 * 3 - 9 - 20  # both 31-px arms, 3 px thick, in sent pixels (edges clip)


def test_zoom_frames_are_the_crop_sequence(run):
    hires, _, trials, steps, run_dir = run
    for t in (t for t in trials if t["method"] == "zoom"):
        zs = sorted((s for s in steps if s["trial_key"] == t["trial_key"]), key=lambda s: s["index"])
        assert len(zs) == 3 and zs[0]["crop"] is None
        box = Box(*hires.target_box(int(t["task"][1:])))
        prev = Box(0, 0, 3840, 2160)
        for a, s in zip(zs, zs[1:], strict=False):
            crop = Box(*s["crop"])
            # placed by the previous answer, half the previous crop, inside it or shifted in-screen
            assert crop == zoom_window(
                Point(a["values_px"]["x"], a["values_px"]["y"]), prev, Size(3840, 2160), 2, 256
            )
            assert crop.contains(box.centre) and (crop.w, crop.h) == (prev.w / 2, prev.h / 2)
            img = _frame(run_dir, s["frame_sha"])
            assert [img.shape[1], img.shape[0]] == s["sent_size"]
            assert s["image_scale"] == pytest.approx(s["sent_size"][0] / crop.w)
            prev = crop
        assert zs[-1]["sent_size"] == [960, 540] and zs[-1]["image_scale"] == 1.0  # native pixels at last
        assert zs[1]["prompt"].startswith("This image is an enlarged part of the screen")
        last = _frame(run_dir, zs[-1]["frame_sha"])  # the crop's own pixels: the orange target is in it
        c = Box(*zs[-1]["crop"])
        x0, y0 = int(box.x0 - c.x0) + 2, int(box.y0 - c.y0) + 2
        assert tuple(last[y0 + 5, x0 + 5]) == (230, 120, 40)


def test_zoom_of_a_calibrated_profile_is_marked_crops_assumed(hires, tmp_path):
    ids = hires.write_fixture(tmp_path, 1)
    setup = quick_setup(
        [f"paths.scenes={tmp_path}", f"tasks=[{ids[0]}]", "models=[sim-gemma-4-26b,sim-ideal-1568]",
         "methods=[zoom,oneshot]", "starts=random:1", "repeats=1"]
    )  # fmt: skip
    specs = plan(setup)
    marks = {(s.model, s.method): s.simulated_assumptions for s in specs}
    assert "crops/zoom assumed" in marks[("sim-gemma-4-26b", "zoom")]
    assert "crops/zoom assumed" not in marks[("sim-gemma-4-26b", "oneshot")]
    assert marks[("sim-ideal-1568", "zoom")] == []  # a hand-set profile: [SIMULATED] only, as before
    zoom = next(s for s in specs if s.method == "zoom")
    assert zoom.zoom == "2/2/256" and next(s for s in specs if s.method == "oneshot").zoom == "-"


def test_zoom_dvoc_refines_on_the_last_crop(run):
    _, _, trials, steps, run_dir = run
    for t in (t for t in trials if t["method"] == "zoom_dvoc"):
        ts = sorted((s for s in steps if s["trial_key"] == t["trial_key"]), key=lambda s: s["index"])
        clicks, verifies = ts[:3], ts[3:]
        assert [s["kind"] for s in clicks] == ["click"] * 3 and verifies
        assert all(s["kind"] == "verify" and s["crop"] == clicks[-1]["crop"] for s in verifies)
        crop = Box(*clicks[-1]["crop"])
        assert verifies[0]["draft"] == clicks[-1]["next_draft"]  # DVOC starts from the zoomed answer
        img = _frame(run_dir, verifies[0]["frame_sha"])
        c = find_crosshair(img, width=3)  # drawn on the crop as sent (960x540, scale 1)
        want = Point(verifies[0]["draft"][0] - crop.x0, verifies[0]["draft"][1] - crop.y0)
        assert img.shape[:2] == (540, 960) and c is not None and c.dist(want) <= 1.5


def test_a_bad_image_block_of_a_simulated_model_is_a_one_line_config_error(tmp_path):
    from dvoc_bench.core.declare import ConfigError

    base = yaml.safe_load((default_conf_dir() / "model" / "sim-ideal-1568.yaml").read_text())
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump({**base, "name": "bad", "image": {"max_pixels": 10}}))
    with pytest.raises(
        ConfigError, match=r"^model bad: image.max_pixels: must be greater than or equal to 256, got 10$"
    ):
        quick_setup([f"paths.models={tmp_path}", "models=[bad]", "tasks=[S1]", "methods=[zoom]"])
    with pytest.raises(ConfigError, match=r"^zoom.factor: must be greater than 1"):
        quick_setup(["models=[sim-ideal]", "tasks=[S1]", "methods=[zoom]", "zoom.factor=1"])


def test_the_steps_frame_holds_the_scale_size_and_crop_of_each_image_sent(run):
    """``load_runs``: the analysis frame carries what the records say of each image sent (``image_scale``,
    ``sent_w``/``sent_h``, the crop's corners), so a notebook can split errors by zoom round."""
    from dvoc_bench.analysis.loaders import load_runs

    _, _, _, steps, run_dir = run
    df = load_runs(run_dir, cache=False).steps.set_index(["trial_key", "index"])
    for s in steps:
        row = df.loc[(s["trial_key"], s["index"])]
        assert row["image_scale"] == pytest.approx(s["image_scale"])
        assert [row["sent_w"], row["sent_h"]] == s["sent_size"]
        if s["crop"] is None:
            assert pd.isna(row["crop_x0"]) and pd.isna(row["crop_y1"])
        else:
            assert [row["crop_x0"], row["crop_y0"], row["crop_x1"], row["crop_y1"]] == s["crop"]
    assert df["crop_x0"].notna().any() and df["crop_x0"].isna().any()
