"""The frame probe tells a model's native coordinate frame from its answers."""

import asyncio
import json
import os

import pytest

from dvoc_bench.core.geometry import Box, Point, Size
from dvoc_bench.models.config import default_conf_dir, load_model_config
from dvoc_bench.models.factory import build_model
from dvoc_bench.models.options import ImageOptions
from dvoc_bench.models.simulator import SimProfile, SimulatedModel
from dvoc_bench.runner.probe import (
    ProbeAnswer,
    ProbeOptions,
    classify,
    probe_model,
    probe_prompt,
    readings,
    score_answer,
)
from dvoc_bench.scenes import SceneRegistry, build_sources, default_scenes_dir
from dvoc_bench.serve import SimBackend, serve_in_thread
from tests.support import run_cli

MODELS = default_conf_dir() / "model"
TASKS = ["S1", "S2", "S3", "S4", "S5", "S6"]


@pytest.fixture(scope="module")
def registry():
    return SceneRegistry(default_scenes_dir(), sources=build_sources(names=["synthetic"]))


def sim(name, registry, **oneshot):
    cfg = load_model_config(name, MODELS)
    raw = dict(cfg.sim or {})
    if oneshot:
        raw["oneshot"] = {**raw["oneshot"], **oneshot}
    return SimulatedModel(name, SimProfile.from_mapping(raw), registry.truth)


def verdict(model, registry, declared, opts=None, max_side=None):
    opts = opts or ProbeOptions()
    answers = asyncio.run(probe_model(model, registry, TASKS, opts, max_side))
    return classify(model.name, declared, answers, opts, simulated=True), answers


def test_probe_prompt_names_no_unit_and_no_size():
    text = probe_prompt("Click the Save button")
    assert "Click the Save button" in text and "click_at" in text
    for word in ("pixel", "1000", "0-1", "normalis", "800", "width"):
        assert word not in text


@pytest.mark.parametrize(
    ("name", "declared", "expected"),
    [("sim-gemma-4-26b", "norm1000", "norm1000"), ("sim-gemini-3.1-flash-lite", "norm1000", "norm1000")],
)
def test_norm1000_profiles_are_recognised(registry, name, declared, expected):
    v, answers = verdict(sim(name, registry), registry, declared)
    assert v.verdict == expected and v.agrees is True
    assert len(answers) == 12 and v.telling >= 8
    # every answer with numbers counts; a profile may answer in prose now and then, as the records did
    # (Gemma 4 26B: 1 of 376 replies without a tool call), and that one is not usable
    assert v.usable == sum(a.raw is not None for a in answers) >= 10
    assert v.median_dist_px["norm1000"] < 10 < v.median_dist_px["pixel"]


def test_pixel_and_norm1_profiles_are_recognised(registry):
    v, _ = verdict(sim("sim-ideal", registry), registry, "pixel")
    assert v.verdict == "pixel" and v.agrees is True
    v, _ = verdict(sim("sim-ideal", registry, frames={"norm1": 1.0}), registry, "pixel")
    assert v.verdict == "norm1" and v.agrees is False  # declared pixel: the probe flags the mismatch


def test_a_model_switching_frames_is_mixed(registry):
    model = sim("sim-ideal", registry, frames={"pixel": 0.5, "norm1000": 0.5})
    v, _ = verdict(model, registry, "pixel", ProbeOptions(repeats=4))
    assert v.verdict == "mixed" and v.agrees is None
    assert v.shares["pixel"] >= 0.2 and v.shares["norm1000"] >= 0.2


def test_classification_rules():
    box, size = Box(100, 100, 140, 120), Size(800, 600)  # centre (120, 110)
    opts = ProbeOptions(min_telling=2)
    a = ProbeAnswer("m", "S1", 0, [120.0, 110.0], "ok")
    score_answer(a, box, size, None, 10)
    assert a.fits == ["pixel"]
    b = ProbeAnswer("m", "S1", 1, [150.2, 183.6], "ok")  # (120, 110) px in 0-1000
    score_answer(b, box, size, None, 10)
    assert b.fits == ["norm1000"]
    miss = ProbeAnswer("m", "S1", 2, [700.0, 500.0], "ok")
    score_answer(miss, box, size, None, 10)
    assert miss.fits == []
    none = ProbeAnswer("m", "S1", 3, None, "parse_error")
    assert classify("m", "pixel", [a, miss, none], opts).verdict == "unclear"  # one telling answer
    assert classify("m", "pixel", [a, a, miss, none], opts).verdict == "pixel"
    v = classify("m", "pixel", [a, b, miss, none], opts)
    assert v.verdict == "mixed" and (v.answers, v.usable, v.telling) == (4, 3, 2)
    # the downscaled-raster reading exists only when the image sent was downscaled
    c = ProbeAnswer("m", "S1", 0, [60.0, 55.0], "ok")
    score_answer(c, box, size, Size(400, 300), 10)
    assert c.fits == ["pixel_sent"]


def test_the_probe_reads_a_normalised_answer_by_the_declared_mapping():
    # by hand, 800x600: (500, 250) in 0-1000 is 500*800/1000 = 400, 250*600/1000 = 150 under u*W/top and
    # 500*799/1000 = 399.5, 250*599/1000 = 149.75 under u*(W-1)/top; pixels are pixels either way
    size = Size(800, 600)
    edge = readings(Point(500, 250), size, None, "edge")
    assert edge["norm1000"] == Point(400.0, 150.0) and edge["pixel"] == Point(500.0, 250.0)
    assert readings(Point(500, 250), size, None)["norm1000"] == Point(399.5, 149.75)
    assert readings(Point(0.5, 0.25), size, None, "edge")["norm1"] == Point(400.0, 150.0)


def test_probe_over_http_sees_the_sent_raster(registry, tmp_path):
    """A pixel-native model sent a 400x300 copy answers in that raster: the probe says pixel_sent."""
    backend = SimBackend(registry=registry)
    backend.warm()
    old = os.environ.get("DVOC_SIM_URL")
    try:
        with serve_in_thread(backend=backend) as (url, _):
            os.environ["DVOC_SIM_URL"] = url
            cfg = load_model_config("local-sim-ideal", MODELS)
            model = build_model(cfg, registry.truth, image=ImageOptions(max_side=400))
            v, _ = verdict(model, registry, cfg.coord_frame, max_side=400)
            assert v.verdict == "pixel_sent" and v.agrees is False
            model = build_model(load_model_config("local-sim", MODELS), registry.truth)
            v, _ = verdict(model, registry, "norm1000")
            assert v.verdict == "norm1000"
    finally:
        if old is None:
            os.environ.pop("DVOC_SIM_URL", None)
        else:
            os.environ["DVOC_SIM_URL"] = old


@pytest.mark.e2e
def test_frame_probe_experiment_from_the_command_line(tmp_path):
    r = run_cli("experiment=frame_probe", "tasks=[S1,S2,S4]", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 0, r.stderr
    assert "sim-gemma-4-26b: answers in norm1000 (declared norm1000)" in r.stdout
    assert "sim-ideal: answers in pixel (declared pixel)" in r.stdout
    verdicts = json.loads((tmp_path / "probe.json").read_text())
    assert {v["model"]: v["verdict"] for v in verdicts} == {
        "sim-gemma-4-26b": "norm1000",
        "sim-ideal": "pixel",
    }
    assert all(v["simulated"] for v in verdicts)
    rows = (tmp_path / "probe.jsonl").read_text().splitlines()
    assert len(rows) == 2 * 3 * 2
    assert not (tmp_path / "trials.jsonl").exists()  # a probe, not a sweep
