"""Where the DVOC overlay's labels go (``overlay.label_placement``): the authors' corners cover S4's target,
``away`` does not; ``paper`` keeps the corners; the keys of the authors' placement are the old ones."""

from __future__ import annotations

import numpy as np
import pytest

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Box, Point, Size
from dvoc_bench.draw.render import OverlayStyle, decode_png, draw_overlay, place_labels
from dvoc_bench.methods.common import TrialEnv
from dvoc_bench.protocol import get_protocol
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.plan import PAPER_STARTS, build_plan
from dvoc_bench.runner.settings import load_settings
from dvoc_bench.scenes import SceneRegistry, build_sources, default_scenes_dir
from tests.support import ScriptedModel, ShotSink, make_spec, offset, run_method

REG = SceneRegistry(default_scenes_dir(), sources=build_sources(names=["synthetic"]))
STYLE = OverlayStyle()


def _boxes(image: np.ndarray, draft: Point, placement: str, position: str = "(640, 480) px") -> list[Box]:
    cx, cy = int(round(draft.x)), int(round(draft.y))
    placed = place_labels(image, cx, cy, ["iter 14", position], placement, STYLE)
    # inclusive pixels -> a box's exclusive right/bottom
    return [Box(x0, y0, x1 + 1, y1 + 1) for _, _, (x0, y0, x1, y1) in placed]


def _intersects(a: Box, b: Box) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def _dark_pixels(frame: np.ndarray, box: Box) -> int:
    """Pixels of the label background (black) inside ``box``."""
    region = frame[int(box.y0) : int(box.y1), int(box.x0) : int(box.x1)]
    return int(np.all(region == STYLE.label_bg, axis=-1).sum())


def test_the_authors_corner_label_covers_s4s_target_and_away_never_does():
    snap = REG.snapshot("S4")
    target = snap.target_box
    drafts = [*PAPER_STARTS, target.centre, Point(5, 5), Point(790, 590), Point(790, 5), Point(5, 590)]
    # the reported friction: the step label in the authors' corner lies on the corner button
    assert _intersects(_boxes(snap.image, drafts[0], "corner")[0], target)
    for d in drafts:
        for box in _boxes(snap.image, d, "away"):
            assert not _intersects(box, target), (d, box)
        # and in the drawn pixels: no label background on the button (the crosshair is drawn in red)
        away = draw_overlay(snap.image, d, mode="crosshair", iteration=14, position_label="(1, 2) px",
                            style=STYLE, labels="away")  # fmt: skip
        assert _dark_pixels(away, target) == _dark_pixels(snap.image, target)
    corner = draw_overlay(snap.image, drafts[0], mode="crosshair", iteration=14, position_label="(1, 2) px",
                          style=STYLE, labels="corner")  # fmt: skip
    assert _dark_pixels(corner, target) > _dark_pixels(snap.image, target) + 50


@pytest.mark.parametrize("task", ["S1", "S3", "S4", "S6"])
def test_away_labels_keep_clear_of_the_crosshair_and_the_circle_and_of_each_other(task):
    image = REG.snapshot(task).image
    for d in [Point(x, y) for x in (0, 60, 200, 399, 400, 740, 799) for y in (0, 20, 150, 300, 580, 599)]:
        step, pos = _boxes(image, d, "away")
        assert not _intersects(step, pos)
        for box in (step, pos):
            dx = max(box.x0 - d.x, 0, d.x - (box.x1 - 1))
            dy = max(box.y0 - d.y, 0, d.y - (box.y1 - 1))
            assert (dx * dx + dy * dy) ** 0.5 > STYLE.circle_radius, (task, d, box)


def test_corner_is_the_drawing_of_before_and_unknown_placements_are_refused():
    img = REG.snapshot("S4").image
    a = draw_overlay(img, Point(600, 500), mode="full", iteration=3, position_label="x", style=STYLE)
    b = draw_overlay(img, Point(600, 500), mode="full", iteration=3, position_label="x", style=STYLE,
                     labels="corner")  # fmt: skip
    assert np.array_equal(a, b)
    with pytest.raises(ValueError, match="unknown label placement 'middle'"):
        draw_overlay(
            img, Point(1, 1), mode="full", iteration=0, position_label=None, style=STYLE, labels="middle"
        )
    with pytest.raises(ConfigError, match="overlay.label_placement"):
        load_settings({"overlay": {"label_placement": "middle"}})


OVERRIDES = ["models=[sim-gemma-4-26b]", "tasks=[S4]", "protocols=[v1,paper]", "overlays=[full,none]"]

OLD_KEYS = {
    ("dvoc", "v1", "full"): "a598015c67853c7272c0",
    ("dvoc", "v1", "none"): "ee744120b518b067a0dc",
    ("dvoc", "paper", "full"): "11805a6ab4d9f6f239cd",
    ("dvoc", "paper", "none"): "08ce1122a965c75e9f3e",
    ("oneshot", "v1", "-"): "023d645dc663d949dbc4",
    ("oneshot", "paper", "-"): "d782c0d5478b39fe8e03",
    ("centre", "-", "-"): "645de9948591c4b1b7a6",
}
"""Keys of the first start's trials, computed by the code before the knob existed (scene hash ``h``)."""


def _first_keys(*overrides: str) -> dict[tuple[str, str, str], tuple[str, str]]:
    plan = build_plan(quick_setup([*OVERRIDES, *overrides]), {"S4": ("h", Size(800, 600))})
    return {
        (p.method, p.protocol, p.overlay): (p.trial_key, p.label_placement)
        for p in plan
        if p.start_index == 1 and p.rep == 0
    }


def test_the_default_placement_keeps_the_keys_of_earlier_records():
    keys = _first_keys()
    assert {k: v[0] for k, v in keys.items()} == OLD_KEYS
    assert {v[1] for v in keys.values()} == {"corner"}


def test_away_changes_only_the_keys_of_trials_that_draw_labels_and_paper_keeps_the_corners():
    keys = _first_keys("overlay.label_placement=away")
    moved = {k for k, (key, _) in keys.items() if key != OLD_KEYS[k]}
    assert moved == {("dvoc", "v1", "full")}
    assert keys[("dvoc", "v1", "full")][1] == "away"
    assert keys[("dvoc", "paper", "full")][1] == "corner"  # the authors' placement under paper
    assert get_protocol("paper").label_placement("away") == "corner"


def test_a_simulated_trial_with_labels_away_carries_the_assumption():
    plan = build_plan(
        quick_setup([*OVERRIDES, "overlay.label_placement=away"]), {"S4": ("h", Size(800, 600))}
    )
    v1 = next(p for p in plan if p.method == "dvoc" and p.protocol == "v1" and p.overlay == "full")
    paper = next(p for p in plan if p.method == "dvoc" and p.protocol == "paper" and p.overlay == "full")
    assert "label placement assumed" in v1.simulated_assumptions
    assert "label placement assumed" not in paper.simulated_assumptions


def test_a_dvoc_trial_draws_and_states_the_placement_of_its_spec():
    model = ScriptedModel(offset(-150, -60), offset(0, 0), offset(0, 0))
    sink = ShotSink()
    snap = REG.snapshot("S4")
    env = TrialEnv(snapshot=snap, model=model, model_identity="m@", save_shot=sink)
    spec = make_spec(task="S4", method="dvoc", alpha="decay", overlay="full", predict="relative",
                     start=list(PAPER_STARTS[0].as_list()), label_placement="away")  # fmt: skip
    res = run_method(spec, env)
    for step in res.steps:
        frame = decode_png(sink.frames[step.frame_sha])
        assert _dark_pixels(frame, snap.target_box) == _dark_pixels(snap.image, snap.target_box)
    assert "each in a corner of the screenshot away from the crosshair" in model.requests[0].text
    assert "top-left corner with the step number" not in model.requests[0].text
