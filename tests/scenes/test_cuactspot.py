"""CUActSpot as a task source (issue 50), on written samples at real size (2560x1400): polygons decide
``hit`` (rule ``polygon``; a point in a Banned polygon misses even inside the target), the box and the
paper's rules stand beside it, category / language / task kind reach the record; every kind of bad
sample fails its own trials with one line naming it while the others run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Box, Point
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.sweep import run_sweep
from dvoc_bench.scenes.cuactspot import ActSpotScenes
from dvoc_bench.scenes.dataset_source import SampleError, spec_from_options
from dvoc_bench.scenes.datasets import DatasetSettings

W, H = 2560, 1400
TARGET = [[1000.0, 500.0], [1400.0, 500.0], [1400.0, 700.0], [1000.0, 700.0]]
BANNED = [[1150.0, 550.0], [1250.0, 550.0], [1250.0, 650.0], [1150.0, 650.0]]  # inside the target
DROP = [[200.0, 1000.0], [500.0, 1000.0], [500.0, 1200.0], [200.0, 1200.0]]


def poly(pid: str, points, type_: str = "Target", rank: str = "1") -> dict:
    return {"id": pid, "type": type_, "rank": rank, "points": points, "visible": True}


def write(root: Path, sid: str, polygons: list[dict], image: bool = True, **extra) -> None:
    rec = {"image_id": sid, "task": "点击目标", "task_en": f"Click the target of {sid}", "polygons": polygons,
           "masks": [], **extra}  # fmt: skip
    (root / f"{sid}.json").write_text(json.dumps(rec, ensure_ascii=False), encoding="utf-8")
    if image:
        arr = np.full((H, W, 3), 240, np.uint8)
        arr[500:700, 1000:1400] = (30, 90, 200)
        Image.fromarray(arr).save(root / f"{sid}.png")


def fixture(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    write(root, "GUI-good", [poly("R1", TARGET), poly("R2", BANNED, "Banned", "")], modality="GUI")
    write(root, "Canvas-drag", [poly("R1", TARGET), poly("R2", DROP, rank="2")])
    write(root, "Text-few", [poly("R1", TARGET[:2])])
    write(root, "Text-bow", [poly("R1", [[1000, 500], [1400, 700], [1400, 500], [1000, 700]])])
    write(root, "Image-out", [poly("R1", [[2400, 100], [2700, 100], [2700, 300], [2400, 300]])])
    write(root, "Canvas-norank2", [poly("R1", TARGET), poly("R3", DROP, rank="3")])
    write(root, "GUI-noimage", [poly("R1", TARGET)], image=False)
    return root


def scenes(root: Path, **kw) -> ActSpotScenes:
    d = DatasetSettings(format="cuactspot", root=str(root), **kw)
    return ActSpotScenes(spec_from_options(d), d.lang)


def test_polygon_rule_decides_hit_and_a_banned_point_misses(tmp_path):
    src = scenes(fixture(tmp_path / "ds"))
    snap = src.snapshot("GUI-good")
    assert snap.size.as_list() == [W, H] and snap.target_box.as_list() == [1000, 500, 1400, 700]
    inside = src.probe("GUI-good", Point(1050, 520))
    assert inside.hit is True and inside.hit_rule == "polygon" and inside.hit_element == "R1"
    banned = src.probe("GUI-good", Point(1200, 600))  # inside the target box and polygon, but Banned
    assert banned.hit is False and banned.hit_element == "banned:R2"
    assert src.probe("GUI-good", Point(1400, 700)).hit is True  # a corner is on the edge: inside
    assert src.probe("GUI-good", Point(1401, 700)).hit is False
    # a drag is one two-point task; each end is probed and looked up by its own id
    assert src.ids() == ["Canvas-drag", "Canvas-norank2", "GUI-good", "GUI-noimage", "Image-out", "Text-bow",
                         "Text-few"]  # fmt: skip
    ends = [e.scene_id for e in src.snapshot("Canvas-drag").truth.ends]
    assert ends == ["Canvas-drag:from", "Canvas-drag:to"]
    assert src.snapshot("Canvas-drag").instruction == "Click the target of Canvas-drag"
    drag = src.probe("Canvas-drag:from", Point(300, 1100))
    assert drag.hit is False and drag.hit_element == "R2"
    assert src.probe("Canvas-drag:to", Point(300, 1100)).hit is True
    assert src.probe("Canvas-drag:to", Point(1050, 520)).hit is False
    to = src.snapshot("Canvas-drag:to")
    assert to.target_box.as_list() == [200, 1000, 500, 1200] and to.scene_id == "Canvas-drag:to"
    said = "Click the target of Canvas-drag\nThis is a drag. Point at where the drag ends: where to drop it."
    assert to.instruction == said
    assert src.snapshot("Canvas-drag:from").target_box.as_list() == [1000, 500, 1400, 700]
    meta = src.meta("GUI-good")
    assert meta["category"] == "GUI" and meta["lang"] == "en" and meta["task_kind"] == "click"
    assert meta["endpoint"] is None
    dm = src.meta("Canvas-drag:to")
    assert dm["task_kind"] == "drag" and dm["category"] == "Canvas" and dm["endpoint"] == "to"
    assert dm["file"] == "Canvas-drag"
    assert src.snapshot("GUI-good").instruction == "Click the target of GUI-good"
    zh = scenes(tmp_path / "ds", lang="zh")
    assert zh.snapshot("GUI-good").instruction == "点击目标" and zh.meta("GUI-good")["lang"] == "zh"
    assert zh.snapshot("Canvas-drag:from").instruction.endswith("请指出拖动的起点：要拖动的对象。")


@pytest.mark.parametrize(
    ("sid", "says"),
    [
        ("Text-few", "polygon R1 has 2 point(s), fewer than 3"),
        ("Text-bow", "polygon R1 is self-intersecting"),
        ("Image-out", "polygon R1 reaches outside the 2560x1400 image"),
        ("Canvas-norank2", "no Target polygon of rank 2 (a drag without its drop target)"),
        ("GUI-noimage", "image not found"),
    ],
)
def test_each_bad_sample_fails_with_one_line_naming_it(tmp_path, sid, says):
    src = scenes(fixture(tmp_path / "ds"))
    with pytest.raises(SampleError) as e:
        src.snapshot(sid)
    text = str(e.value)
    assert text.startswith(f"sample {sid}: ") and says in text and "\n" not in text
    assert e.value.error_class == "scene"


def test_a_sweep_runs_the_good_samples_and_fails_the_bad_ones_their_own_trials(tmp_path):
    root = fixture(tmp_path / "ds")
    setup = quick_setup(["dataset=cuactspot", f"dataset.root={root}", "models=[sim-ideal]",
                         "methods=[oneshot]", "run.quiet=true"])  # fmt: skip
    res = run_sweep(setup, tmp_path / "run")
    by = {t["task"]: t for t in res.trials}
    assert set(by) == {"GUI-good", "Canvas-drag", "Text-few", "Text-bow", "Image-out", "Canvas-norank2",
                       "GUI-noimage"}  # fmt: skip
    good = by["GUI-good"]
    assert good["status"] == "ok" and good["hit_rule"] == "polygon"
    # the box centre lies in the Banned square: sim-ideal aims at a point of the target outside it
    assert good["hit"] is True and good["hit_box"] is True and good["hit_element"] == "R1"
    assert good["hit_radius"] is True and good["final_dist_px"] > 40
    assert good["sample"]["category"] == "GUI" and good["sample"]["task_kind"] == "click"
    t = by["Canvas-drag"]
    assert t["hit"] is True and t["sample"]["task_kind"] == "drag" and t["sample"]["endpoint"] is None
    assert t["drag"]["from_hit"] is True and t["drag"]["to_hit"] is True
    for sid in ("Text-few", "Text-bow", "Image-out", "Canvas-norank2", "GUI-noimage"):
        t = by[sid]
        assert t["status"] == "error" and t["error_class"] == "scene"
        assert t["error"].startswith(f"sample {sid}")


def test_bad_settings_are_one_line_config_errors(tmp_path):
    root = fixture(tmp_path / "ds")
    base = ["dataset=cuactspot", f"dataset.root={root}", "models=[sim-ideal]", "methods=[oneshot]"]
    with pytest.raises(ConfigError, match="^dataset.where: unknown key 'ui_type' for dataset=cuactspot"):
        quick_setup([*base, "dataset.where={ui_type: icon}"])
    with pytest.raises(ConfigError, match="^dataset.root: no <id>.json annotations under"):
        quick_setup(["dataset=cuactspot", f"dataset.root={tmp_path}", "models=[sim-ideal]"])
    picked = quick_setup([*base, "dataset.where={task_kind: drag}"])
    assert picked.registry.ids() == ["Canvas-drag"]  # a drag is one two-point task
    ends = [e.scene_id for e in picked.registry.truth("Canvas-drag").ends]
    assert ends == ["Canvas-drag:from", "Canvas-drag:to"]
    assert picked.registry.truth("Canvas-drag:to").target_box == Box(200, 1000, 500, 1200)
    with pytest.raises(ConfigError, match="^tasks: unknown sample id 'Canvas-drag:to'"):
        quick_setup([*base, "tasks=[Canvas-drag:to]"])


def test_a_drag_succeeds_only_when_both_endpoints_hit_and_each_is_reported(tmp_path):
    """sim-ideal grounds both ends of a drag (one-shot and DVOC), also a drop polygon shaped like an L whose
    box centre lies outside it; a drag whose drop polygon lies wholly in a Banned region cannot be done: its
    "to" end misses, so the drag fails while its "from" end still counts."""
    from dvoc_bench.analysis import load_runs
    from dvoc_bench.analysis.datasets import drag_success, tables

    root = tmp_path / "ds"
    root.mkdir()
    write(root, "Canvas-drag", [poly("R1", TARGET), poly("R2", DROP, rank="2")])
    ell = [[200.0, 1000.0], [600.0, 1000.0], [600.0, 1040.0], [240.0, 1040.0], [240.0, 1300.0],
           [200.0, 1300.0]]  # fmt: skip
    write(root, "Canvas-ell", [poly("R1", TARGET), poly("R2", ell, rank="2")])
    cover = [[150.0, 950.0], [650.0, 950.0], [650.0, 1250.0], [150.0, 1250.0]]
    blocked = [poly("R1", TARGET), poly("R2", DROP, rank="2"), poly("R3", cover, "Banned", "")]
    write(root, "Canvas-void", blocked)
    setup = quick_setup(["dataset=cuactspot", f"dataset.root={root}", "models=[sim-ideal]",
                         "methods=[oneshot,dvoc]", "starts=oneshot", "run.quiet=true"])  # fmt: skip
    res = run_sweep(setup, tmp_path / "run")
    by = {(t["task"], t["method"]): t for t in res.trials}
    assert len(by) == 6  # one trial per drag and method, with both points
    ell = by[("Canvas-ell", "oneshot")]
    assert ell["hit"] is True and ell["drag"]["to_hit"] is True  # the L's box centre (400, 1150) is off it
    assert not Box(240, 1040, 600, 1300).contains(Point(*ell["drop_point"]))
    void = by[("Canvas-void", "oneshot")]
    assert void["drag"]["from_hit"] is True and void["drag"]["to_hit"] is False and void["hit"] is False
    assert void["drag"]["to_hit_box"] and void["drag"]["to_element"] == "banned:R3"
    trials = load_runs(tmp_path / "run").trials
    tab = drag_success(trials).set_index("method")
    for m in ("oneshot", "dvoc"):
        row = tab.loc[m]
        assert row["drags"] == 3 and row["attempts"] == 3 and row["both"] == 2
        assert row["from_hit"] == 1.0 and row["to_hit"] == 2 / 3 and row["lo"] <= 2 / 3 <= row["hi"]
    titles = [title for title, _ in tables(trials)]
    assert "Drags: both points on target (and each endpoint) — rule `hit`" in titles


def test_experiment_real_screens_runs_every_method_and_reports_drags_per_endpoint(tmp_path):
    """``experiment=real_screens``: oneshot, dvoc, som, zoom and zoom_dvoc on every task; the dataset
    tables split by category, task kind and endpoint and pair the drag's ends."""
    from dvoc_bench.analysis import load_runs
    from dvoc_bench.analysis.datasets import tables

    root = tmp_path / "ds"
    root.mkdir()
    write(root, "GUI-good", [poly("R1", TARGET), poly("R2", BANNED, "Banned", "")], modality="GUI")
    write(root, "Canvas-drag", [poly("R1", TARGET), poly("R2", DROP, rank="2")])
    offline = quick_setup(["experiment=real_screens", f"dataset.root={root}"])
    assert [m.name for m in offline.models] == ["sim-ideal", "ocr-tesseract", "omniparser-parse"]
    setup = quick_setup(["experiment=real_screens", f"dataset.root={root}", "run.quiet=true",
                         "run.frames=none", "models=[sim-ideal]"])  # fmt: skip
    res = run_sweep(setup, tmp_path / "run")
    methods = {"oneshot", "dvoc", "som", "zoom", "zoom_dvoc"}
    assert {(t["task"], t["method"]) for t in res.trials} == {
        (task, m) for task in ("GUI-good", "Canvas-drag") for m in methods
    }
    assert all(t["drop_point"] is not None for t in res.trials if t["task"] == "Canvas-drag")
    assert all(t["status"] == "ok" and t["hit_rule"] == "polygon" for t in res.trials)
    tabs = dict(tables(load_runs(tmp_path / "run").trials))
    drags = tabs["Drags: both points on target (and each endpoint) — rule `hit`"]
    assert set(drags["method"]) == methods and (drags["drags"] == 1).all()
    kinds = tabs["By task kind (click, drag, multi) — rule `hit`"]
    assert set(kinds["task_kind"]) == {"click", "drag"}
    assert "By category (CUActSpot; precision-cua-bench: label type) — rule `hit`" in tabs
    ends = tabs["By category and task kind (a drag: both points, then each end) — rule `hit`"]
    assert set(ends["kind"]) == {"click", "drag: both", "drag: from", "drag: to"}
    assert set(ends["method"]) == methods
    # Set-of-Mark keeps both picks: the start's as for a click, the end's beside it (drop_*)
    (som,) = [t["som"] for t in res.trials if t["method"] == "som" and t["task"] == "Canvas-drag"]
    drop = next(t["drop_point"] for t in res.trials if t["method"] == "som" and t["task"] == "Canvas-drag")
    assert som["drop_chosen_valid"] and som["drop_point"] == drop and som["drop_hit"] is True
    assert Box(*som["drop_mark_box"][:4]).contains(Point(*drop))
    assert "Set-of-Mark on drags: each end's pick (share of trials)" in tabs
    # a record written before the end's pick was kept still loads (no SoM-per-end table then)
    old = tmp_path / "old"
    old.mkdir()
    for f in (tmp_path / "run").iterdir():
        if f.is_file() and f.name != "trials.jsonl":
            (old / f.name).write_bytes(f.read_bytes())
    lines = [json.loads(x) for x in (tmp_path / "run" / "trials.jsonl").read_text().splitlines()]
    for t in lines:
        if t.get("som"):
            t["som"] = {k: v for k, v in t["som"].items() if not k.startswith("drop_")}
    (old / "trials.jsonl").write_text("".join(json.dumps(t) + "\n" for t in lines))
    before = load_runs(old).trials
    assert before["som_drop_chosen_id"].isna().all() and len(before) == len(lines)
    assert "Set-of-Mark on drags: each end's pick (share of trials)" not in dict(tables(before))


def test_the_simulators_aim_on_a_polygon_follows_crops_and_resizes(tmp_path):
    """An L-shaped target: the aim is on the L (its box centre is not), and stays the same screen point in
    a crop scaled 2x (what zoom sends) and in a downscaled whole screen."""
    from dvoc_bench.core.geometry import Size
    from dvoc_bench.core.polygons import contains
    from dvoc_bench.models.simulator.reading import truth_in_image

    root = tmp_path / "ds"
    root.mkdir()
    ell = [[200.0, 1000.0], [600.0, 1000.0], [600.0, 1040.0], [240.0, 1040.0], [240.0, 1300.0],
           [200.0, 1300.0]]  # fmt: skip
    write(root, "GUI-ell", [poly("R1", ell)])
    truth = scenes(root).snapshot("GUI-ell").truth
    aim = truth.aim
    shape = [(x, y) for x, y in ell]
    assert contains(shape, aim) and not contains(shape, truth.target_box.centre)
    crop = truth_in_image(truth, Size(800, 700), (100.0, 900.0, 500.0, 1250.0))
    assert crop.aim.x == pytest.approx((aim.x - 100) * 2) and crop.aim.y == pytest.approx((aim.y - 900) * 2)
    small = truth_in_image(truth, Size(1280, 700))
    assert small.aim.x == pytest.approx(aim.x / 2) and small.aim.y == pytest.approx(aim.y / 2)
