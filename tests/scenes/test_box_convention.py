"""Dataset box conventions are found, not assumed (dvoc_bench/scenes/box_convention.py): every
file's boxes are checked against their images' sizes; a file whose boxes fit the other convention far
better than the one its format names is refused in one line naming the file, the evidence and the override
``dataset.box_format``; with the override it loads right. Checked on a real release that ships ScreenSpot-v2
under the official names with corner boxes (../shared/thirdparty/gui-actor-ssv2/, microsoft/GUI-Actor @
d98d1bb, MIT) and on the official-format fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.scenes.box_convention import Evidence, convention
from dvoc_bench.scenes.dataset_fixture import write_fixture
from dvoc_bench.scenes.dataset_source import spec_from_options
from dvoc_bench.scenes.datasets import DatasetSettings, load_samples
from tests.support import need_thirdparty


def need_release() -> Path:
    return need_thirdparty("gui-actor-ssv2")


def load(root: Path, fmt: str, **options):
    return load_samples(spec_from_options(DatasetSettings(format=fmt, root=str(root), **options)))


def test_the_corner_box_release_is_refused_in_one_line_naming_file_evidence_and_override():
    root = need_release()
    with pytest.raises(ConfigError) as e:
        load(root, "screenspot_v2")
    line = str(e.value)
    assert "\n" not in line
    # the first file read, its evidence (counted here from the file itself), the override
    first = "screenspot_desktop_v2.json"
    recs = json.loads((root / first).read_text(encoding="utf-8"))
    enlarged = sum(
        r["bbox"][0] + r["bbox"][2] > r["img_size"][0] + 1
        or r["bbox"][1] + r["bbox"][3] > r["img_size"][1] + 1
        for r in recs
    )
    assert line.startswith(f"dataset: {first}: its boxes look like x1,y1,x2,y2, not the x,y,w,h"), line
    assert f"{enlarged} of {len(recs)} checked boxes" in line and "read as x1,y1,x2,y2, 0 do" in line
    assert "dataset.box_format=xyxy" in line


def test_with_the_override_the_release_loads_right():
    root = need_release()
    samples = load(root, "screenspot_v2", box_format="xyxy")
    raw = [r for f in sorted(root.glob("screenspot_*_v2.json")) for r in json.loads(f.read_text("utf-8"))]
    assert len(samples) == len(raw) == 1272
    by_name = {(r["img_filename"], r["instruction"].strip()): r for r in raw}
    for s in samples:  # each box is the file's corners, never enlarged by a width added twice
        r = by_name[(s.image.name, s.instruction)]
        assert s.box.as_list() == [float(v) for v in r["bbox"]]
        assert s.img_size == tuple(r["img_size"])
    inside = sum(
        0 <= s.box.x0 < s.box.x1 <= s.img_size[0] and 0 <= s.box.y0 < s.box.y1 <= s.img_size[1]
        for s in samples
        if s.img_size
    )
    assert inside >= 1271  # one box of the mobile file ends past its image: that sample fails alone
    # the format's own convention can still be forced: the user's word, not second guessed
    assert len(load(root, "screenspot_v2", box_format="xywh")) == 1272


@pytest.mark.parametrize("fmt", ["screenspot", "screenspot_v2", "screenspot_pro", "manifest"])
def test_official_format_fixtures_load_as_named(tmp_path, fmt):
    expected = write_fixture(tmp_path, fmt, screens=3, per_screen=4)
    samples = {s.id: s for s in load(tmp_path, fmt)}
    for e in expected:  # ScreenSpot's files have no img_size: the images' headers give the sizes
        assert samples[e.id].box.as_list() == pytest.approx(e.box.as_list(), abs=0.5)


def _rewrite(path: Path, convert) -> None:
    recs = json.loads(path.read_text(encoding="utf-8"))
    for r in recs:
        r["bbox"] = convert(r["bbox"])
    path.write_text(json.dumps(recs), encoding="utf-8")


def test_a_screenspot_file_with_corner_boxes_is_refused_from_its_images_sizes(tmp_path):
    # no img_size in ScreenSpot files: the evidence comes from the images' headers
    write_fixture(tmp_path, "screenspot_v2", (1280, 720), screens=3, per_screen=12)
    target = tmp_path / "screenspot_desktop_v2.json"
    _rewrite(target, lambda b: [b[0], b[1], b[0] + b[2], b[1] + b[3]])
    with pytest.raises(
        ConfigError, match=r"^dataset: screenspot_desktop_v2\.json: its boxes look like x1,y1"
    ):
        load(tmp_path, "screenspot_v2")
    assert len(load(tmp_path, "screenspot_v2", box_format="xyxy")) == 36


def test_a_pro_file_with_width_height_boxes_is_refused(tmp_path):
    write_fixture(tmp_path, "screenspot_pro", (1280, 720), screens=1, per_screen=8)
    (target,) = sorted((tmp_path / "annotations").glob("*.json"))
    _rewrite(target, lambda b: [b[0], b[1], b[2] - b[0], b[3] - b[1]])
    with pytest.raises(ConfigError) as e:
        load(tmp_path, "screenspot_pro")
    assert str(e.value).startswith(
        f"dataset: {target.name}: its boxes look like x,y,w,h, not the x1,y1,x2,y2"
    )
    assert "dataset.box_format=xywh" in str(e.value)


def test_a_few_bad_boxes_do_not_refuse_a_file():
    # two misfits in 100 is a bad sample or two (each fails alone), not a file in the other convention
    assert convention("xywh", None, Evidence(100, {"xywh": 2, "xyxy": 0}), "f.json") == "xywh"
    # many misfits, but the other convention does no better: not evidence for it either
    assert convention("xywh", None, Evidence(100, {"xywh": 40, "xyxy": 30}), "f.json") == "xywh"
    with pytest.raises(ConfigError):
        convention("xywh", None, Evidence(100, {"xywh": 40, "xyxy": 3}), "f.json")
    assert convention("xywh", "xyxy", Evidence(0, {"xywh": 0, "xyxy": 0}), "f.json") == "xyxy"


@pytest.mark.e2e
def test_the_cli_refuses_the_release_with_exit_2_and_one_line(tmp_path, cli):
    root = need_release()
    r = cli(
        "dataset=screenspot_v2",
        f"dataset.root={root}",
        "models=[sim-ideal]",
        "methods=[oneshot]",
        f"hydra.run.dir={tmp_path / 'run'}",
    )
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert lines[0].startswith("config error: dataset: screenspot_desktop_v2.json: its boxes look like x1,y1")
    assert not (tmp_path / "run" / "trials.jsonl").exists()
