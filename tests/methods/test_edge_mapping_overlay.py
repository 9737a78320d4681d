"""DVOC writes what it reads (a finding of the cold review of issue 52): a model config that declares
``coord_frame.mapping: edge`` (``u * W / 1000``) has its answers read that way, so the crosshair position
in the prompt, the drawn position label and the history are written with the same mapping, not with the
harness's ``u * (W - 1) / 1000``. Checked on a 4K screen at off-centre points where the two mappings round
to different units."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from dvoc_bench.core.frames import FrameRule
from dvoc_bench.core.geometry import Box, Point, Size
from dvoc_bench.core.scene import Element, SceneTruth, Snapshot
from dvoc_bench.methods import dvoc as dvoc_module
from dvoc_bench.methods.common import TrialEnv
from dvoc_bench.models.config import default_conf_dir, load_model_config
from dvoc_bench.models.options import ImageOptions
from dvoc_bench.protocol import get_protocol
from tests.support import ScriptedModel, ShotSink, make_spec, offset, run_method

W, H = 3840, 2160
START = (3073.536, 1512.972)
"""``x = 800.4 * W / 1000``, ``y = 700.45 * H / 1000``: 800 and 700 with ``u * W``, 801 and 701 with
``u * (W - 1)``."""


def units(v: float, extent: int) -> int:
    """The 0-1000 unit of a pixel under ``u * extent / 1000``, rounded half away from zero (by hand)."""
    u = v * 1000 / extent
    return int(math.floor(u + 0.5))


def edge_rule() -> FrameRule:
    cfg = load_model_config("gpt-4o-text1000", default_conf_dir() / "model", check_key=False)
    assert cfg.frame_rule is not None and cfg.frame_rule.mapping == "edge"
    assert cfg.frame_rule.units == "norm1000"
    return cfg.frame_rule


def snapshot_4k() -> Snapshot:
    box = Box(3300, 1400, 3340, 1430)
    target = Element(id="t", box=box, role="button", label="target")
    truth = SceneTruth(scene_id="E4K", size=Size(W, H), instruction="Click the target", target_id="t",
                       target_box=box, elements=(target,))  # fmt: skip
    img = np.full((H, W, 3), 40, dtype=np.uint8)
    img.setflags(write=False)
    return Snapshot(truth=truth, image=img, content_hash="e4k")


def test_the_units_differ_between_the_mappings_at_these_points():
    assert (units(START[0], W), units(START[1], H)) == (800, 700)
    assert (units(START[0], W - 1), units(START[1], H - 1)) == (801, 701)


def test_a_dvoc_trial_on_an_edge_config_writes_its_positions_by_that_mapping(monkeypatch):
    labels: list[str | None] = []
    draw = dvoc_module.draw_overlay

    def spy(*args, **kwargs):
        labels.append(kwargs.get("position_label"))
        return draw(*args, **kwargs)

    monkeypatch.setattr(dvoc_module, "draw_overlay", spy)
    rule = edge_rule()
    model = ScriptedModel(offset(50, -30), offset(0, 0), offset(0, 0))
    env = TrialEnv(snapshot=snapshot_4k(), model=model, model_identity="m@", save_shot=ShotSink(),
                   image=ImageOptions(max_side=None, max_pixels=None), frame_rule=rule)  # fmt: skip
    spec = make_spec("E4K", "dvoc", frame="norm1000", start=list(START), alpha="decay", overlay="full",
                     predict="relative", max_iterations=3)  # fmt: skip
    res = run_method(spec, env)
    assert res.status == "ok" and res.model_calls >= 2
    assert model.requests[0].image_size == Size(W, H)  # sent at 4K, no downscale
    # the answer (50, -30) was read by the config's rule: u * W / 1000
    s0 = res.steps[0]
    assert s0.reported_offset_px == pytest.approx([50 * W / 1000, -30 * H / 1000])
    nxt = Point(*s0.next_draft)
    assert nxt == Point(pytest.approx(START[0] + 192.0), pytest.approx(START[1] - 64.8))
    want0 = (units(START[0], W), units(START[1], H))
    want1 = (units(nxt.x, W), units(nxt.y, H))
    assert want1 != (units(nxt.x, W - 1), units(nxt.y, H - 1))  # this point tells the mappings apart too
    # what the model was told: the crosshair line, the drawn label and the history, all by u * W / 1000
    line = re.compile(r"Crosshair position: \((\d+), (\d+)\)")
    assert tuple(map(int, line.search(model.requests[0].text).groups())) == want0
    assert tuple(map(int, line.search(model.requests[1].text).groups())) == want1
    assert labels[0] is not None and labels[0].startswith(f"({want0[0]}, {want0[1]})")
    assert labels[1] is not None and labels[1].startswith(f"({want1[0]}, {want1[1]})")
    history = model.requests[1].text
    assert f"crosshair at ({want0[0]}, {want0[1]})" in history
    assert f"went to ({want1[0]}, {want1[1]})" in history
    assert "dx=50, dy=-30" in history
    # and what it was told reads back through its rule within half a unit of the true position
    u = rule.to_pixels(*want1, Size(W, H))
    assert abs(u.x - nxt.x) <= 0.5 * W / 1000 and abs(u.y - nxt.y) <= 0.5 * H / 1000


def test_the_harness_frame_keeps_its_last_pixel_labels():
    """Configs without ``mapping`` (the authors' records, the simulator) are written as before."""
    p = Point(*START)
    label = get_protocol("v1").overlay_label(p, "norm1000", Size(W, H), 30)
    assert label.startswith(f"({units(p.x, W - 1)}, {units(p.y, H - 1)})")
