"""``sim-ideal`` is ideal on every screen (issue 52, item 3): its DVOC converges wherever its one-shot hits,
on a red target, a blue one and one painted in the crosshair's own colour (its localiser once took the red
target for its own red crosshair); the profiles fitted to real models keep their localiser."""

from __future__ import annotations

import json

import pytest

from dvoc_bench.models.config import default_conf_dir, load_model_config
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.sweep import run_sweep

COLOURS = {"RED": (200, 30, 30), "XHAIR": (255, 0, 0), "BLUE": (40, 80, 220)}
"""A red target, the crosshair's own colour (``overlay_style.crosshair_color``'s default), a blue one."""

SCENE = """\
id: {id}
name: coloured-button
difficulty: easy
size: [800, 600]
background: [245, 245, 245]
instruction: Click the button labeled 'Go'
target: go
elements:
  - id: go
    kind: rect
    box: [380, 280, 440, 304]
    fill: [{c}]
    outline: [{c}]
    outline_width: 2
    text: Go
    text_at: [398, 284]
    text_color: [255, 255, 255]
    font_size: 12
    role: button
    label: Go
    interactive: true
"""


@pytest.fixture(scope="module")
def trials(tmp_path_factory) -> list[dict]:
    root = tmp_path_factory.mktemp("colours")
    (root / "synthetic").mkdir()
    for sid, rgb in COLOURS.items():
        (root / "synthetic" / f"{sid}.yaml").write_text(SCENE.format(id=sid, c=", ".join(map(str, rgb))))
    over = [f"paths.scenes={root}", f"tasks=[{','.join(COLOURS)}]", "models=[sim-ideal]"]
    over += ["methods=[dvoc,oneshot]", "overlays=[full,crosshair]", "run.quiet=true"]
    run_sweep(quick_setup(over), root / "run")
    return [json.loads(x) for x in (root / "run" / "trials.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("task", sorted(COLOURS))
def test_sim_ideal_dvoc_hits_wherever_its_oneshot_hits(trials, task):
    mine = [t for t in trials if t["task"] == task]
    dvoc = [t for t in mine if t["method"] == "dvoc"]
    assert len(dvoc) == 10 and all(t["status"] == "ok" for t in mine)
    assert all(t["hit"] for t in mine if t["method"] == "oneshot")
    assert all(t["hit"] for t in dvoc), [(t["overlay"], t["final_point"]) for t in dvoc if not t["hit"]]
    cx, cy = dvoc[0]["target_centre"]
    worst = max(abs(t["final_point"][0] - cx) + abs(t["final_point"][1] - cy) for t in dvoc)
    assert worst < 6.0  # ~1 px noise per call; the localiser's confusion on XHAIR was ~15 px


def test_only_the_ideal_profiles_know_the_crosshair():
    models = default_conf_dir() / "model"
    knows = set()
    for path in models.glob("sim-*.yaml"):
        cfg = load_model_config(path.stem, models, check_key=False)
        if (cfg.sim or {}).get("perception", {}).get("knows_crosshair"):
            knows.add(path.stem)
    assert knows == {"sim-ideal", "sim-ideal-1568", "sim-ideal-touch"}
