"""Standard datasets as task sources (issue 19): fixtures in every public format, built from rendered
screenshots whose target boxes are known, load exactly, run oneshot and dvoc with the simulator and give
the split tables; per-sample failures are the sample's own; bad settings are one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Box
from dvoc_bench.core.rundir import read_jsonl
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.sweep import plan, run_sweep
from dvoc_bench.scenes.dataset_fixture import write_fixture
from dvoc_bench.scenes.dataset_source import DatasetScenes, SampleError, spec_from_options
from dvoc_bench.scenes.datasets import DatasetSettings, stratified
from tests.support import HANG_S

FORMATS = ("screenspot", "screenspot_v2", "screenspot_pro", "manifest")


def scenes_of(root: Path, fmt: str, **options) -> DatasetScenes:
    return DatasetScenes(spec_from_options(DatasetSettings(format=fmt, root=str(root), **options)))


def close(a: Box, b: Box, tol: float = 0.5) -> bool:
    return all(abs(x - y) <= tol for x, y in zip(a.as_list(), b.as_list(), strict=True))


@pytest.mark.parametrize("size", [(1280, 720), (3840, 2160)], ids=["720p", "4k"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_target_box_loads_exact(tmp_path, fmt, size):
    screens, per = (3, 4) if size[0] == 1280 else (1, 2)  # 4K: few samples, the test stays fast
    expected = write_fixture(tmp_path, fmt, size, screens=screens, per_screen=per)
    ds = scenes_of(tmp_path, fmt)
    assert sorted(ds.samples) == sorted(e.id for e in expected)
    for e in expected:
        snap = ds.snapshot(e.id)
        assert snap.size.as_list() == list(size)
        assert close(snap.target_box, e.box), (e.id, snap.target_box, e.box)
        assert snap.instruction == e.instruction
        meta = ds.meta(e.id)
        assert meta["ui_type"] == e.ui_type and meta["dataset"] == fmt
        assert {k: meta[k] for k in e.meta} == e.meta
    assert ds.cache.loads == 0  # building snapshots decoded no pixels
    e = expected[0]
    snap = ds.snapshot(e.id)
    img = snap.image
    assert ds.cache.loads == 1 and img.shape == (size[1], size[0], 3)
    x0, y0 = int(e.box.x0), int(e.box.y0)
    # the drawn target: its top-left pixel differs from the background just outside it
    assert tuple(img[y0 + 1, x0 + 1]) != tuple(img[y0 - 2, x0 - 2])


def test_xywh_is_converted_and_v1_ids_are_file_and_index(tmp_path):
    expected = write_fixture(tmp_path, "screenspot", screens=3, per_screen=2, with_ids=False)
    rec = json.loads((tmp_path / "screenspot_mobile.json").read_text())[1]
    x, y, w, h = rec["bbox"]
    ds = scenes_of(tmp_path, "screenspot")
    assert "screenspot_mobile:1" in ds.samples
    assert ds.snapshot("screenspot_mobile:1").target_box.as_list() == [x, y, x + w, y + h]
    assert sorted(e.id for e in expected) == sorted(ds.samples)
    # the v2 release beside it is not read as v1 (and the other way round)
    write_fixture(tmp_path, "screenspot_v2", screens=1, per_screen=2)
    assert len(scenes_of(tmp_path, "screenspot").samples) == 6
    assert len(scenes_of(tmp_path, "screenspot_v2").samples) == 2
    assert (tmp_path / "screenspotv2_image").is_dir() and (tmp_path / "screenspot_imgs").is_dir()


def test_where_picks_files_and_images_override(tmp_path):
    write_fixture(tmp_path, "screenspot_pro", screens=3, per_screen=4)
    icons = scenes_of(tmp_path, "screenspot_pro", where={"ui_type": "icon", "platform": "macos"})
    assert icons.samples and all(
        icons.meta(i)["ui_type"] == "icon" and icons.meta(i)["platform"] == "macos" for i in icons.samples
    )
    several = scenes_of(tmp_path, "screenspot_pro", where={"application": ["vscode", "excel"]})
    assert {several.meta(i)["application"] for i in several.samples} == {"vscode", "excel"}
    one = scenes_of(tmp_path, "screenspot_pro", files=["vscode_macos.json"])
    assert {one.meta(i)["application"] for i in one.samples} == {"vscode"}
    moved = tmp_path / "elsewhere"
    (tmp_path / "images").rename(moved)
    ds = scenes_of(tmp_path, "screenspot_pro", images=str(moved))
    first = next(iter(ds.samples))
    assert ds.snapshot(first).image.shape == (720, 1280, 3)
    with pytest.raises(SampleError, match="image not found"):
        scenes_of(tmp_path, "screenspot_pro").snapshot(first)


def test_limit_is_a_seeded_stratified_sample(tmp_path):
    write_fixture(tmp_path, "screenspot_pro", screens=6, per_screen=10)  # 60: 3 groups x {text, icon}
    samples = list(scenes_of(tmp_path, "screenspot_pro").samples.values())
    a = stratified(samples, 12, seed=1)
    assert [s.id for s in a] == [s.id for s in stratified(samples, 12, seed=1)]
    assert [s.id for s in a] != [s.id for s in stratified(samples, 12, seed=2)]
    strata = {}
    for s in a:
        key = (s.meta["ui_type"], s.meta["group"])
        strata[key] = strata.get(key, 0) + 1
    assert len(strata) == 6 and set(strata.values()) == {2}  # proportional: 12 of 60 = 2 per stratum
    assert [s.id for s in a] == sorted((s.id for s in a), key=[x.id for x in samples].index)
    assert len(stratified(samples, 1, 0)) == 1
    assert stratified(samples, 60, 0) == samples and stratified(samples, 500, 0) == samples


def test_bad_samples_fail_alone(tmp_path):
    write_fixture(tmp_path, "screenspot_pro", screens=1, per_screen=4)
    ann = tmp_path / "annotations" / "vscode_macos.json"
    recs = json.loads(ann.read_text())
    recs[1]["bbox"] = [1200, 700, 1400, 760]  # outside the 1280x720 image
    recs[2]["img_size"] = [1920, 1080]  # disagrees with the file
    recs[3]["img_filename"] = "vscode/missing.png"
    ann.write_text(json.dumps(recs))
    ds = scenes_of(tmp_path, "screenspot_pro")
    ids = list(ds.samples)
    ds.snapshot(ids[0])
    for i, why in ((1, "outside"), (2, "img_size says 1920x1080"), (3, "image not found")):
        with pytest.raises(SampleError, match=why) as e:
            ds.snapshot(ids[i])
        assert e.value.error_class == "scene"
    setup = quick_setup(
        [
            "dataset=screenspot_pro",
            f"dataset.root={tmp_path}",
            "models=[sim-ideal]",
            "methods=[oneshot]",
            "starts=centre",
            "run.quiet=true",
        ]  # fmt: skip
    )
    res = run_sweep(setup, tmp_path / "run")
    by = {t["task"]: t for t in res.trials}
    assert by[ids[0]]["status"] == "ok"
    for i in (1, 2, 3):
        assert by[ids[i]]["status"] == "error" and by[ids[i]]["error_class"] == "scene"
        assert by[ids[i]]["scene_kind"] == "dataset"


def test_sweep_records_and_split_tables_screenspot_v2(tmp_path):
    expected = {e.id: e for e in write_fixture(tmp_path / "ds", "screenspot_v2", screens=3, per_screen=2)}
    setup = quick_setup(
        [
            "dataset=screenspot_v2",
            f"dataset.root={tmp_path / 'ds'}",
            "models=[sim-ideal]",
            "methods=[oneshot,dvoc]",
            "run.quiet=true",
        ]  # fmt: skip
    )
    assert setup.swept.starts == ("scaled", 5)  # datasets default to the paper's points scaled
    res = run_sweep(setup, tmp_path / "run")
    # DVOC from each of the 5 start points; one-shot once per sample (a sample is the unit: its repeats would
    # be identical requests)
    assert len(res.trials) == 6 * (5 + 1)
    assert sum(t["method"] == "oneshot" for t in res.trials) == 6
    for t in res.trials:
        e = expected[t["task"]]
        assert t["scene_kind"] == "dataset" and t["status"] == "ok" and t["simulated"]
        assert close(Box.from_list(t["target_box"]), e.box)
        s = t["sample"]
        assert s["dataset"] == "screenspot_v2" and s["ui_type"] == e.ui_type
        assert s["data_source"] == e.meta["data_source"] and s["platform"] == e.meta["platform"]
        assert s["instruction"] == e.instruction
        if t["method"] == "dvoc":  # the paper's points scaled from 800x600 to 1280x720
            assert t["start"][0] in {round(x * 1.6, 1) for x in (194, 361, 308, 184, 638)}
    assert res.shots_line.startswith("frames: ") and "run.frames=sent" in res.shots_line
    from dvoc_bench.analysis import load_runs
    from dvoc_bench.analysis.datasets import tables

    tabs = dict(tables(load_runs(tmp_path / "run").trials))
    assert set(tabs) == {"Overall — rule `hit`", "By text vs icon — rule `hit`",
                         "By platform — rule `hit`", "By data source (ScreenSpot) — rule `hit`"}  # fmt: skip
    ov = tabs["Overall — rule `hit`"]
    assert list(ov["trials"]) == [30, 6] and list(ov["samples"]) == [6, 6] and (ov["rule"] == "hit").all()
    by_type = tabs["By text vs icon — rule `hit`"]
    assert set(by_type["ui_type"]) == {"text", "icon"} and by_type["trials"].sum() == 36
    assert (by_type["lo"] <= by_type["accuracy"]).all() and (by_type["accuracy"] <= by_type["hi"]).all()


@pytest.mark.e2e
def test_cli_screenspot_pro_4k_oneshot_start_and_report(tmp_path, cli):
    expected = {e.id: e for e in write_fixture(tmp_path / "pro", "screenspot_pro", (3840, 2160),
                                               screens=2, per_screen=2)}  # fmt: skip
    run = tmp_path / "run"
    r = cli("experiment=screenspot_pro", f"dataset.root={tmp_path / 'pro'}", "models=[sim-ideal]",
            f"hydra.run.dir={run}", "run.quiet=true")  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    assert "frames: " in r.stdout and "MB per task" in r.stdout
    trials = list(read_jsonl(run / "trials.jsonl"))
    assert len(trials) == 4 * 3 and {t["method"] for t in trials} == {"oneshot", "dvoc", "zoom"}
    steps = list(read_jsonl(run / "steps.jsonl"))
    for t in trials:
        assert close(Box.from_list(t["target_box"]), expected[t["task"]].box)
        assert t["sample"]["group"] == expected[t["task"]].meta["group"]
        if t["method"] == "dvoc":  # starts=oneshot: step 0 is the model's one-shot answer, DVOC starts there
            assert t["start"] is None and t["start_from"] == "oneshot"
            mine = sorted((s for s in steps if s["trial_key"] == t["trial_key"]), key=lambda s: s["index"])
            assert mine[0]["kind"] == "click" and mine[1]["kind"] == "verify"
            assert mine[1]["draft"] == mine[0]["next_draft"]
            assert t["model_calls"] == t["iterations"] + 1
    sizes = {Image.open(p).size for p in (run / "frames").glob("*.png")}
    assert (3840, 2160) in sizes  # run.frames=sent without image.max_side: as sent, full size
    assert all(t["hit"] for t in trials if t["method"] == "zoom")  # sim-ideal through every crop
    rep = tmp_path / "report"
    r = cli_report(run, rep)
    assert r.returncode == 0, r.stderr[-2000:]
    text = (rep / "report.md").read_text()
    for title in (
        "Overall",
        "By text vs icon",
        "By group (ScreenSpot-Pro)",
        "By application (ScreenSpot-Pro)",
    ):
        assert f"#### {title} — rule `hit`" in text
    assert "calls_per_success" in text and "Wilson 95 %" in text and "[SIMULATED]" in text
    assert "outside the simulator's calibration" in text


def cli_report(run: Path, out: Path):
    import subprocess
    import sys

    args = [str(run), "--out", str(out), "--no-figures", "--n-boot", "50"]
    cmd = [sys.executable, "-m", "dvoc_bench.report", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=HANG_S)


def test_frames_none_and_sent_downscaled(tmp_path):
    write_fixture(tmp_path / "ds", "manifest", (3840, 2160), screens=1, per_screen=1)
    base = ["dataset=manifest", f"dataset.root={tmp_path / 'ds'}", "models=[sim-ideal]",
            "methods=[oneshot]", "run.quiet=true"]  # fmt: skip
    res = run_sweep(quick_setup([*base, "run.frames=none"]), tmp_path / "none")
    assert not list((tmp_path / "none" / "frames").glob("*.png"))
    steps = list(read_jsonl(tmp_path / "none" / "steps.jsonl"))
    assert steps and all(len(s["frame_sha"]) == 64 for s in steps)
    assert res.shot_bytes == 0 and "0 written" in res.shots_line
    from dvoc_bench.runner.doctor import diagnose

    assert diagnose(tmp_path / "none").clean  # hashes without files are what run.frames=none means
    res = run_sweep(quick_setup([*base, "image.max_side=1000"]), tmp_path / "sent")
    (png,) = (tmp_path / "sent" / "frames").glob("*.png")
    with Image.open(png) as im:
        assert im.size == (1000, 562)  # stored as a model with image.max_side=1000 is sent it
    assert res.shot_bytes == png.stat().st_size
    res = run_sweep(quick_setup([*base, "run.frames=all", "image.max_side=1000"]), tmp_path / "all")
    sizes = sorted(Image.open(p).size for p in (tmp_path / "all" / "frames").glob("*.png"))
    assert sizes == [(1000, 562), (3840, 2160)]  # what was sent, and the original screenshot


def test_starts_on_a_4k_screen_and_defaults(tmp_path):
    from dvoc_bench.core.geometry import Size
    from dvoc_bench.runner.plan import PAPER_STARTS, start_points

    k = Size(3840, 2160)
    scaled = start_points("scaled", 5, k, "x", 0)
    assert [p.as_list() for p in scaled] == [[round(p.x * 4.8, 1), round(p.y * 3.6, 1)] for p in PAPER_STARTS]
    assert start_points("centre", 1, k, "x", 0)[0].as_list() == [1919.5, 1079.5]
    assert start_points("oneshot", 1, k, "x", 0) == [None]
    assert quick_setup(["models=[sim-ideal]"]).swept.starts == ("paper", 5)  # the paper's scenes: paper
    write_fixture(tmp_path, "manifest", screens=1, per_screen=2)
    setup = quick_setup(["dataset=manifest", f"dataset.root={tmp_path}", "models=[sim-ideal]",
                         "methods=[dvoc]", "starts=centre"])  # fmt: skip
    specs = plan(setup)
    assert len(specs) == 2 and all(s.start == [639.5, 359.5] for s in specs)
    picked = quick_setup(["dataset=manifest", f"dataset.root={tmp_path}", "models=[sim-ideal]",
                          "tasks=[manifest_0_0_1]"])  # fmt: skip
    assert list(picked.swept.tasks) == ["manifest_0_0_1"]


DS = ["dataset=manifest", "dataset.root={ds}"]
BAD = [
    (["experiment=screenspot_pro"], "dataset.root: required with dataset=screenspot_pro"),
    (["dataset=screenspot", "dataset.root={parquet}"], "dataset.root: {parquet} holds a parquet copy"),
    ([*DS, "dataset.where={{colour:red}}"], "dataset.where: unknown key 'colour'"),
    ([*DS, "tasks=[nope]"], "tasks: unknown sample id 'nope'"),
    ([*DS, "dataset.limit=0"], "dataset.limit:"),
    ([*DS, "starts=middle"], "starts: unknown value 'middle'"),
    ([*DS, "run.frames=some"], "run.frames: unknown value 'some'"),
]


@pytest.mark.e2e
@pytest.mark.parametrize(("args", "message"), BAD, ids=[m.split(":")[0] for _, m in BAD])
def test_bad_dataset_settings_are_one_line_errors(tmp_path, cli, args, message):
    (tmp_path / "pq" / "data").mkdir(parents=True)
    (tmp_path / "pq" / "data" / "test-00000-of-00001.parquet").write_bytes(b"PAR1")
    write_fixture(tmp_path / "ds", "manifest", screens=1, per_screen=1)
    fill = {"parquet": tmp_path / "pq", "ds": tmp_path / "ds"}
    r = cli(*(a.format(**fill) for a in args), "models=[sim-ideal]", f"hydra.run.dir={tmp_path / 'run'}")
    assert r.returncode == 2, r.stdout + r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("config error: " + message.format(**fill)), r.stderr
    assert not (tmp_path / "run" / "trials.jsonl").exists()


def test_config_error_in_process():
    with pytest.raises(ConfigError, match=r"^dataset\.root: required"):
        quick_setup(["dataset=screenspot"])
    assert np is not None


def test_the_plan_runs_one_shot_once_per_sample_and_says_what_a_repeat_costs(tmp_path):
    from dvoc_bench.runner.sizing import plan_lines
    from dvoc_bench.runner.sweep import plan

    write_fixture(tmp_path / "ds", "screenspot_v2", screens=3, per_screen=2)
    over = ["dataset=screenspot_v2", f"dataset.root={tmp_path / 'ds'}", "models=[sim-ideal]"]
    over.append("methods=[oneshot]")
    setup = quick_setup(over)
    specs = plan(setup)
    assert len(specs) == 6 and {s.start_index for s in specs} == {1}  # 6 samples, once each
    text = "\n".join(plan_lines(setup, specs))
    assert "Dataset samples: 6" in text and "up to 30 more calls per repeat" in text  # 6 x 5 attempts
    assert len(plan(quick_setup([*over, "repeats=2"]))) == 12  # asked for: identical requests again


def test_a_deeply_nested_annotation_file_is_one_line(tmp_path):
    """100,000 levels of nesting in an annotation file: a one-line config error, not a RecursionError."""
    write_fixture(tmp_path / "ds", "screenspot_v2", screens=1, per_screen=1)
    ann = next((tmp_path / "ds").rglob("*.json"))
    ann.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(ConfigError) as e:
        quick_setup(["dataset=screenspot_v2", f"dataset.root={tmp_path / 'ds'}", "models=[sim-ideal]"])
    assert "\n" not in str(e.value) and "nested too deeply" in str(e.value)


def _png_header(path: Path, w: int, h: int) -> None:
    """A PNG that declares ``w`` x ``h`` pixels (a decompression bomb when large) in a few bytes."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    body = chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b"")
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + body)


def _v2(tmp_path: Path) -> tuple[Path, list, dict[str, Path]]:
    exp = write_fixture(tmp_path / "ds", "screenspot_v2", screens=2, per_screen=1)
    images = {k: s.image for k, s in scenes_of(tmp_path / "ds", "screenspot_v2").samples.items()}
    return tmp_path / "ds", exp, images


def test_a_decompression_bomb_or_an_oversized_image_fails_its_own_sample(tmp_path):
    """One 20000x20000 image (a few bytes on disk) and one larger than scenes.max_side: those samples fail
    their own trials (error_class scene), the others run."""
    root, exp, images = _v2(tmp_path)
    _png_header(images[exp[0].id], 20000, 20000)
    setup = quick_setup(["dataset=screenspot_v2", f"dataset.root={root}", "models=[sim-ideal]",
                         "methods=[oneshot]", "scenes.max_side=1000", "run.quiet=true"])  # fmt: skip
    res = run_sweep(setup, tmp_path / "run")
    by = {t["task"]: t for t in res.trials}
    assert by[exp[0].id]["status"] == "error" and by[exp[0].id]["error_class"] == "scene"
    assert by[exp[1].id]["error_class"] == "scene" and "max_side" in by[exp[1].id]["error"]  # 1280 > 1000
    ok = run_sweep(quick_setup(["dataset=screenspot_v2", f"dataset.root={root}", "models=[sim-ideal]",
                                "methods=[oneshot]", "run.quiet=true"]), tmp_path / "run2")  # fmt: skip
    assert {t["task"]: t["status"] for t in ok.trials} == {exp[0].id: "error", exp[1].id: "ok"}


def test_dataset_paths_stay_inside_the_root_unless_allowed(tmp_path):
    """An annotation file named outside the root is refused; an image outside it (../, absolute, or a
    symlink out) fails its sample; ``dataset.allow_outside_root=true`` reads them."""
    root, exp, images = _v2(tmp_path)
    outside = tmp_path / "elsewhere.png"
    outside.write_bytes(images[exp[0].id].read_bytes())
    inner = images[exp[1].id]  # a symlink inside the root that points out of it
    moved = tmp_path / "moved.png"
    inner.rename(moved)
    inner.symlink_to(moved)
    base = ["dataset=screenspot_v2", f"dataset.root={root}", "models=[sim-ideal]", "methods=[oneshot]"]
    with pytest.raises(ConfigError, match="^dataset.files: '../../../etc/passwd' lies outside dataset.root"):
        quick_setup([*base, "dataset.files=[../../../etc/passwd]"])
    ann = next(p for p in root.rglob("*.json") if exp[0].instruction in p.read_text())
    data = json.loads(ann.read_text())
    data[[d["instruction"] for d in data].index(exp[0].instruction)]["img_filename"] = str(outside)
    ann.write_text(json.dumps(data))  # absolute, outside the root
    res = run_sweep(quick_setup([*base, "run.quiet=true"]), tmp_path / "run")
    bad = [t for t in res.trials if t["status"] == "error"]
    assert {t["task"] for t in bad} == {exp[0].id, exp[1].id}
    assert all(t["error_class"] == "scene" and "outside dataset.root" in t["error"] for t in bad)
    allowed = quick_setup([*base, "dataset.allow_outside_root=true", "run.quiet=true"])
    allowed = run_sweep(allowed, tmp_path / "r2")
    assert all(t["status"] == "ok" for t in allowed.trials)


def test_a_truncated_image_is_a_scene_error_of_its_sample(tmp_path, caplog):
    """A PNG cut short after its header opens, then fails to decode: that sample's trials are errors of
    class scene, without a traceback; the other sample runs."""
    root, exp, images = _v2(tmp_path)
    data = images[exp[0].id].read_bytes()
    images[exp[0].id].write_bytes(data[: len(data) // 3])
    setup = quick_setup(["dataset=screenspot_v2", f"dataset.root={root}", "models=[sim-ideal]",
                         "methods=[oneshot]", "run.quiet=true"])  # fmt: skip
    res = run_sweep(setup, tmp_path / "run")
    by = {t["task"]: t for t in res.trials}
    assert by[exp[0].id]["error_class"] == "scene" and "cannot decode" in by[exp[0].id]["error"]
    assert by[exp[1].id]["status"] == "ok"
    assert "Traceback" not in caplog.text and "failed inside the harness" not in caplog.text


def test_a_manifest_error_names_the_files_line(tmp_path):
    """Issue 52: a manifest's bad line 2 was reported as "line 1 column 1" (each line parsed alone)."""
    write_fixture(tmp_path, "manifest", screens=1, per_screen=3)
    manifest = tmp_path / "manifest.jsonl"
    rows = manifest.read_text().splitlines()
    assert len(rows) == 3
    broken = [rows[0], "", '{"image": oops}', rows[2]]  # a blank line 2, bad JSON on line 3
    manifest.write_text("\n".join(broken) + "\n")
    with pytest.raises(ConfigError) as e:
        scenes_of(tmp_path, "manifest")
    assert str(e.value) == "dataset: manifest.jsonl line 3: not JSON (Expecting value at column 11)"
    bad = json.loads(rows[1])
    del bad["instruction"]
    manifest.write_text("\n".join([rows[0], "", json.dumps(bad), rows[2]]) + "\n")
    with pytest.raises(ConfigError) as e:
        scenes_of(tmp_path, "manifest")
    assert str(e.value) == "dataset: manifest.jsonl line 3: missing the instruction"
