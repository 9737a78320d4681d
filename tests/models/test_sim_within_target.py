"""sim-ideal's noise kept inside the target's box (``sim.noise.within_target``): an oracle of the harness
that hits a 1.6 px caret (precision-cua-bench) as it hits a button, without moving any fitted profile
(issue 50)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dvoc_bench.core.geometry import Box, Point, Size
from dvoc_bench.core.scene import Element, SceneTruth
from dvoc_bench.models.simulator import SimProfile, load_profile
from dvoc_bench.models.simulator.behaviour import perceive, round_in_frame

CONF = Path(__file__).resolve().parents[2] / "conf" / "model"
CARET = Element("caret", "caret", Box(100.2, 40.0, 101.8, 58.0))
"""A caret position as precision-cua-bench draws it: 1.6 px wide."""
TRUTH = SceneTruth("P1", Size(400, 300), "Click before the x", "caret", CARET.box, (CARET,))


def _answers(profile: SimProfile, n: int, outlier_p: float = 0.0) -> list[Point]:
    """``n`` point answers as the simulator gives them: perceived, then rounded to integer pixels."""
    rng = np.random.default_rng(7)
    out = []
    for _ in range(n):
        noise, outliers = profile.noise, profile.outlier
        p = perceive(TRUTH, TRUTH.aim, "caret", noise, profile.oneshot.noise_px, outliers, outlier_p, rng)
        out.append(Point(round_in_frame(p.x, "pixel"), round_in_frame(p.y, "pixel")))
    return out


def test_sim_ideal_lands_every_answer_on_a_caret_smaller_than_its_noise() -> None:
    ideal = load_profile(CONF / "sim-ideal.yaml")
    assert ideal.noise.within_target
    assert all(CARET.box.contains(p) for p in _answers(ideal, 2000))
    free = ideal.model_copy(update={"noise": ideal.noise.model_copy(update={"within_target": False})})
    missed = sum(not CARET.box.contains(p) for p in _answers(free, 2000))
    assert missed > 200  # without the bound, 1 px Laplace noise leaves a 1.6 px caret often


def test_within_target_leaves_the_stream_and_the_digest() -> None:
    ideal = load_profile(CONF / "sim-ideal.yaml")
    free = ideal.model_copy(update={"noise": ideal.noise.model_copy(update={"within_target": False})})
    assert ideal.digest() == free.digest()
    wide = Element("wide", "wide", Box(50.0, 20.0, 250.0, 80.0))
    truth = SceneTruth("P2", Size(400, 300), "Click it", "wide", wide.box, (wide,))
    a, b = np.random.default_rng(3), np.random.default_rng(3)
    for _ in range(200):  # a box far larger than the noise: the same draws, the same points
        pa = perceive(truth, truth.aim, "wide", ideal.noise, 1.0, ideal.outlier, 0.0, a)
        pb = perceive(truth, truth.aim, "wide", free.noise, 1.0, free.outlier, 0.0, b)
        assert pa == pb


def test_an_outlier_is_not_pulled_back_into_the_target() -> None:
    ideal = load_profile(CONF / "sim-ideal.yaml")
    answers = _answers(ideal, 200, outlier_p=1.0)
    assert not any(CARET.box.contains(p) for p in answers)


def test_only_the_ideal_profile_bounds_its_noise() -> None:
    bounded = {p.stem for p in CONF.glob("sim-*.yaml") if load_profile(p).noise.within_target}
    assert bounded == {"sim-ideal", "sim-ideal-1568", "sim-ideal-touch"}
    assert not SimProfile().noise.within_target
