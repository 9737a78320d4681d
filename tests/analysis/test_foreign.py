"""Other harnesses' per-sample results imported (dvoc_bench.analysis.foreign, ``report --import FILE --format
F``) on the real logs of ../shared/thirdparty: every record imports, the source's published counts are
reproduced or every differing sample is listed with its cause, a zoom's step 1 vs final is a paired
comparison with its calls; bad input is one line naming the row and the field.

The expected numbers come from the sources, not from the code under test: the counts published in the
logs and READMEs (OmniParser 625 / 1,581; KV-Ground 80.1 %, its step 1 73.2 % with 162 misses fixed and 54
hits lost; the router 80.9 %), the router's own results file (``submission.json``), and the records read
here directly with the json module.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from dvoc_bench import report
from dvoc_bench.analysis.compare import method_pairs
from dvoc_bench.analysis.export import SchemaError
from dvoc_bench.analysis.foreign import ROUTER, import_out, load_import
from dvoc_bench.analysis.import_check import counts, differing
from dvoc_bench.analysis.leaderboard import leaderboard
from tests.support import need_thirdparty

OMNI = "omniparser-sspro/logs_sspro_omniv2.json"
KV = "zoom-consistency/kv_capture.json"
CROSS = "zoom-consistency/qwen_cross_capture.json"
ANN = "phi-ground/sspro_annotations"


@pytest.fixture(scope="module")
def omni():
    return load_import(need_thirdparty(OMNI), "omniparser", need_thirdparty(ANN))


@pytest.fixture(scope="module")
def cross():
    return load_import(need_thirdparty(CROSS), "zoom", need_thirdparty(ANN))


def test_every_omniparser_record_imports_and_each_verdict_difference_is_an_edge(omni):
    recs = [json.loads(line) for line in need_thirdparty(OMNI).read_text().splitlines() if line.strip()]
    t = omni.trials
    assert len(t) == len(recs) == 1581 and t["valid"].all()
    assert (t["method"] == "som").all() and (t["model_calls"] == 1).all()
    # the source's own count, as published in its log: 625 / 1,581
    assert counts(t)[("gpt-4o+omniparser-v2", "som")][:2] == (1581, 625)
    # independently: the records whose logged point is on the truth box's right or bottom edge, which the
    # source judged wrong (its verdict was on the unrounded point); inside-or-on the box for us
    on_edge = {
        str(r["idx"])
        for r in recs
        if r["correctness"] == "wrong"
        and r["bbox"][0] <= r["pred"][0] <= r["bbox"][2]
        and r["bbox"][1] <= r["pred"][1] <= r["bbox"][3]
    }
    d = differing(t)
    assert set(d["paper_trial_id"]) == on_edge and len(on_edge) == 5
    assert (d["cause"] == "edge").all()
    assert int(t["hit"].sum()) == 625 + 5
    # 8 records name a sample the annotations lack: kept, size unknown
    assert int(t["image_w"].isna().sum()) == 8


def test_kv_ground_zoom_reproduces_its_count_and_step1_vs_final_is_paired(tmp_path):
    runs = load_import(need_thirdparty(KV), "zoom")
    t = runs.trials
    zoom = t[t["method"] == "zoom"]
    assert len(zoom) == 1581 and round(100 * zoom["hit"].mean(), 1) == 80.1  # published: 80.1 %
    assert differing(t).empty
    assert (zoom["model_calls"] == 2).all() and len(
        runs.steps[runs.steps["trial_key"].isin(zoom["trial_key"])]
    ) == 3162
    pairs = method_pairs(t)
    row = pairs[(pairs["a"] == "zoom") & (pairs["b"] == "zoom_step1")].iloc[0]
    # the source's README: step 1 -> final goes 73.2 % -> 80.1 %, 162 misses fixed, 54 hits lost
    assert round(100 * row["rate_b"], 1) == 73.2 and (row["a_only"], row["b_only"]) == (162, 54)
    from scipy.stats import binomtest  # an independent two-sided exact McNemar

    want = binomtest(54, 162 + 54, 0.5).pvalue
    assert row["mcnemar_p"] == pytest.approx(want, rel=1e-9) and row["lo"] < row["diff"] < row["hi"]


def test_the_router_reproduces_80_9_and_its_results_file(cross):
    t = cross.trials
    c = counts(t)
    assert c[("kv-ground-8b", "zoom")][2] == 1266
    n, theirs, ours = c[(ROUTER, "zoom_router")]
    assert n == 1581 and theirs == ours and round(100 * ours / n, 1) == 80.9  # published: 80.9 %
    # KV-Ground selected for 64.9 % of samples (README): its final point is the router's
    kv = t[(t["model"] == "kv-ground-8b") & (t["method"] == "zoom")].set_index("task")
    rt = t[t["model"] == ROUTER].set_index("task")
    same = (rt["final_x"] == kv.loc[rt.index, "final_x"]) & (rt["final_y"] == kv.loc[rt.index, "final_y"])
    assert round(100 * same.mean(), 1) == 64.9
    # the leaderboard entry equals the source's own results file, cell by cell
    sub = json.loads(need_thirdparty("zoom-consistency/submission.json").read_text())["results"]
    ours_board = leaderboard(t, cross.steps)[f"{ROUTER} / zoom_router"]["results"]
    cells = [(k, g, x) for k in ("group", "application") for g in sub[k] for x in sub[k][g]]
    assert len(cells) == 96
    for k, g, x in cells:
        assert ours_board[k][g][x] == pytest.approx(sub[k][g][x], abs=5e-5), (k, g, x)
    for x in ("icon", "text", "avg"):
        assert ours_board["overall"][x] == pytest.approx(sub["overall"][x], abs=5e-5)


def test_the_report_door_lists_the_counts_and_the_differences(tmp_path, capsys):
    out = tmp_path / "rep"
    board = tmp_path / "board.json"
    args = ["--import", str(need_thirdparty(OMNI)), "--format", "omniparser", "--annotations",
            str(need_thirdparty(ANN)), "--out", str(out), "--no-figures", "--n-boot", "50",
            "--leaderboard", str(board)]  # fmt: skip
    assert report.main(args) == 0
    text = (out / "report.md").read_text()
    section = text.split("### Imported results")[1]
    assert "| 1581 | 625 | 39.5 % | 630 | 39.8 % | 5 | edge 5 |" in section
    assert section.count("| edge |") == 5
    entry = json.loads(board.read_text())["gpt-4o+omniparser-v2 / som"]
    assert entry["dvoc_bench"]["hits"] == 630 and entry["dvoc_bench"]["calls_per_sample"] == 1.0


def _log(tmp: Path, details: list[dict], name: str = "eval.json") -> Path:
    path = tmp / name
    path.write_text(json.dumps({"metrics": {}, "details": details}))
    return path


def _rec(idx: int, pred, raw: str, bbox=(350, 250, 450, 350), correct: str = "correct") -> dict:
    return {"img_path": f"./images/app/s{idx}.png", "prompt_to_evaluate": f"click {idx}",
            "application": "app", "ui_type": "icon", "group": "Dev", "platform": "linux",
            "task_filename": "app_linux", "pred": pred, "raw_response": raw, "bbox": list(bbox),
            "correctness": correct, "idx": idx}  # fmt: skip


def _ann(tmp: Path, n: int, size=(2000, 1000)) -> Path:
    folder = tmp / "ann"
    folder.mkdir(exist_ok=True)
    recs = [{"img_filename": f"app/s{i}.png", "bbox": [350, 250, 450, 350], "instruction": f"click {i}",
             "id": f"app_linux_{i}", "application": "app", "platform": "linux", "img_size": list(size),
             "ui_type": "icon", "group": "Dev"} for i in range(n)]  # fmt: skip
    (folder / "app_linux.json").write_text(json.dumps(recs))
    return folder


def test_reread_reads_raw_replies_as_the_sweep_and_names_bad_rows(tmp_path, caplog):
    from dvoc_bench.runner.reread import reply_reader

    reader, _ = reply_reader("vllm-os-atlas-7b")
    # OS-Atlas answers a box in 0-1000: (100,200),(300,400) -> centre (200, 300) -> about (400, 300) px
    # of a 2000 x 1000 screenshot (u * W / 1000, within the 1 px the mapping conventions differ by)
    log = _log(tmp_path, [
        _rec(0, [400, 300], "<|box_start|>(100,200),(300,400)<|box_end|>"),
        _rec(1, [10, 10], "I cannot see that element.", correct="wrong"),
        _rec(2, [5000, 300], "<|box_start|>(100,200),(300,400)<|box_end|>", correct="wrong"),
    ])  # fmt: skip
    with caplog.at_level(logging.WARNING):
        runs = load_import(log, "sspro", _ann(tmp_path, 3), reader, "vllm-os-atlas-7b")
    t = runs.trials.set_index("paper_trial_id")
    assert t.loc["0", "final_x"] == pytest.approx(400, abs=1) and t.loc["0", "final_y"] == pytest.approx(
        300, abs=1
    )
    assert t.loc["0", "task"] == "app_linux_0" and t.loc["0", "image_w"] == 2000
    from dvoc_bench.coords import screen_point
    from dvoc_bench.core.geometry import Size

    _, pt = screen_point("vllm-os-atlas-7b", Size(2000, 1000), "<|box_start|>(100,200),(300,400)<|box_end|>")
    assert pt is not None and (t.loc["0", "final_x"], t.loc["0", "final_y"]) == (pt.x, pt.y)
    assert pd_na(t.loc["1", "final_x"]) and not t.loc["1", "hit"]
    steps = runs.steps.set_index("trial_key")
    assert steps.loc[t.loc["1", "trial_key"], "parse_status"] == "parse_error"
    assert "row 1: field `raw_response`" in caplog.text
    # row 2: the source's pred lies outside the image; our re-read point is the same as row 0's
    assert t.loc["2", "hit"] and not t.loc["2", "paper_success"]
    d = differing(runs.trials).set_index("paper_trial_id")
    assert d.loc["2", "cause"] == "frame"


def test_without_reread_a_pred_outside_the_image_is_out_of_frame(tmp_path, caplog):
    log = _log(tmp_path, [_rec(0, [400, 300], "x"), _rec(1, [2400, 300], "x", correct="wrong")])
    with caplog.at_level(logging.WARNING):
        runs = load_import(log, "sspro", _ann(tmp_path, 2))
    t = runs.trials.set_index("paper_trial_id")
    assert t.loc["0", "hit"] and not t.loc["1", "hit"] and pd_na(t.loc["1", "final_x"])
    assert "row 1: field `pred`: (2400, 300) outside the 2000x1000 image" in caplog.text
    assert runs.steps.set_index("trial_key").loc[t.loc["1", "trial_key"], "parse_status"] == "out_of_frame"


def pd_na(v) -> bool:
    import pandas as pd

    return bool(pd.isna(v))


def test_bad_files_are_one_line_and_exit_2(tmp_path, capsys):
    log = _log(tmp_path, [_rec(0, [400, 300], "x")])
    assert report.main(["--import", str(log), "--format", "nope", "--out", str(tmp_path / "o")]) == 2
    assert "unknown import format 'nope'" in capsys.readouterr().err
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.json").write_text(
        json.dumps([{"instruction": "zzz", "bbox": [0, 0, 1, 1], "application": "q"}])
    )
    assert report.main(["--import", str(log), "--format", "sspro", "--annotations", str(other),
                        "--out", str(tmp_path / "o")]) == 2  # fmt: skip
    assert "no row joins the annotations" in capsys.readouterr().err
    broken = _log(tmp_path, [{"prompt_to_evaluate": "a", "pred": None, "correctness": "wrong"}], "b.json")
    with pytest.raises(SchemaError, match=r"row 0: field `bbox`: missing"):
        load_import(broken, "sspro")
    assert report.main(["--import", str(log), "--format", "omniparser", "--reread", "vllm-os-atlas-7b",
                        "--out", str(tmp_path / "o")]) == 2  # fmt: skip
    assert "--reread: not for --format omniparser" in capsys.readouterr().err
    assert report.main(["--import", str(log), "--format", "sspro", "--reread", "no-such-model",
                        "--out", str(tmp_path / "o")]) == 2  # fmt: skip
    assert capsys.readouterr().err.startswith("config error:")


def test_an_import_never_writes_into_a_run_or_beside_the_source(tmp_path):
    run = tmp_path / "runs" / "r1"
    out = import_out([str(run)], ["/data/logs.json"], "sspro")
    assert out is not None and out.parent == run.parent and out.name == "report-r1+logs"
    assert import_out([], ["/shared/x/logs.json"], "omniparser") == Path("runs") / "import-logs"
    assert import_out([str(run)], [], "v1") is None


def test_the_viewer_shows_imported_trials(tmp_path):
    from dvoc_bench.analysis.viewer import build_site

    runs = load_import(need_thirdparty(KV), "zoom")
    files = build_site([], tmp_path / "view", imported=[runs])
    chunks = "".join(v for k, v in files.items() if k.startswith("data/trials/"))
    assert chunks.count('"trial_key":"kv_capture.json#') == len(runs.trials) == 2 * 1581
    assert "an imported log holds no images" in chunks


def test_chinese_rows_join_and_negative_rows_are_left_out(tmp_path, caplog):
    ann = _ann(tmp_path, 2)
    recs = json.loads((ann / "app_linux.json").read_text())
    recs[1]["instruction_cn"] = "点击 1"
    (ann / "app_linux.json").write_text(json.dumps(recs, ensure_ascii=False))
    cn = dict(_rec(1, [400, 300], "x"), prompt_to_evaluate="点击 1", lang="cn")
    neg = dict(_rec(0, None, "x", correct="correct"), gt_type="negative")
    del neg["bbox"]
    with caplog.at_level(logging.WARNING):
        runs = load_import(_log(tmp_path, [_rec(0, [400, 300], "x"), cn, neg]), "sspro", ann)
    assert list(runs.trials["task"]) == ["app_linux_0", "app_linux_1"]
    assert "1 records of gt_type negative (no target box) left out" in caplog.text


def test_an_import_exports_and_reimports_as_v1(omni, tmp_path):
    from dvoc_bench.analysis.export import export, load_export

    path = export(omni, tmp_path / "omni.jsonl")
    again = load_export(path)
    assert counts(again.trials) == counts(omni.trials)
    rows = sorted(differing(omni.trials)["paper_trial_id"])
    assert sorted(differing(again.trials)["paper_trial_id"]) == rows and len(rows) == 5


SSPRO_LINE = b'{"prompt_to_evaluate": "x", "pred": [1, 2], "bbox": [0, 0, 9, 9], "correctness": "correct"}'
"""A valid first record (read and converted before the next line is: the file is streamed)."""


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"\xff\xfe not utf-8", "not UTF-8 text"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deep"),
        (SSPRO_LINE + b"\n" + b"[" * 100_000 + b"]" * 100_000 + b"\n", "line 2: JSON nested too deep"),
    ],
)
def test_a_file_that_is_no_text_or_nested_too_deep_is_one_line_exit_2(tmp_path, capsys, content, says):
    log = tmp_path / "bad.json"
    log.write_bytes(content)
    assert report.main(["--import", str(log), "--format", "sspro", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and len(err.splitlines()) == 1
