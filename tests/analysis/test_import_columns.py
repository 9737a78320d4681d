"""Issue 51, item 7: an import streams into typed columns (dvoc_bench.analysis.columns) instead of keeping
every row: the frames it gives are the ones the rows-kept-whole path gave (the pre-change code, kept here
as the reference) on real third-party logs and on hand-written rows that reach every branch; no row is
held once the next one is read; a row costs the columns a few bytes each."""

from __future__ import annotations

import json
import math
import weakref
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from dvoc_bench.analysis.columns import SHARE_UP_TO, Columns
from dvoc_bench.analysis.export import SPEND, SchemaError, _validated, load_rows
from dvoc_bench.analysis.foreign import convert, load_import
from dvoc_bench.analysis.loaders import attach_trials
from dvoc_bench.analysis.schema import STEP_COLUMNS, TRIAL_COLUMNS, Runs, coerce
from dvoc_bench.core.control import LoopConfig
from dvoc_bench.core.geometry import Box, Point
from dvoc_bench.core.scoring import score
from tests.support import need_thirdparty

OMNI = "omniparser-sspro/logs_sspro_omniv2.json"
CROSS = "zoom-consistency/qwen_cross_capture.json"
ANN = "phi-ground/sspro_annotations"


# ------------------------------------------------------------------ the reference: every row kept whole


def _old_rescore(t: pd.DataFrame) -> pd.DataFrame:
    foreign = t["source"].fillna("import") != "run"
    if not foreign.any():
        return t
    loop = LoopConfig()
    t = t.copy()
    t.loc[foreign, "epsilon"] = t.loc[foreign, "epsilon"].fillna(loop.epsilon)
    t.loc[foreign, "hit_radius_min"] = t.loc[foreign, "hit_radius_min"].fillna(loop.hit_radius_min)
    t.loc[foreign, "target_cx"] = (t["target_x0"] + t["target_x1"]) / 2
    t.loc[foreign, "target_cy"] = (t["target_y0"] + t["target_y1"]) / 2
    idx = t.index[foreign]
    cols = ["final_x", "final_y", "target_x0", "target_y0", "target_x1", "target_y1", "epsilon",
            "hit_radius_min"]  # fmt: skip
    out: dict[str, list[Any]] = {k: [] for k in ("hit", "within_eps", "hit_radius", "radius_px",
                                                 "final_dist_px")}  # fmt: skip
    for fx, fy, x0, y0, x1, y1, eps, rmin in t.loc[idx, cols].itertuples(index=False):
        pt = None if pd.isna(fx) or pd.isna(fy) else Point(float(fx), float(fy))
        sc = score(pt, Box(float(x0), float(y0), float(x1), float(y1)), float(eps), float(rmin))
        out["hit"].append(sc.hit)
        out["within_eps"].append(sc.within_eps)
        out["hit_radius"].append(sc.hit_radius)
        out["radius_px"].append(sc.radius_px)
        out["final_dist_px"].append(math.nan if sc.final_dist_px is None else round(sc.final_dist_px, 3))
    for k, v in out.items():
        t.loc[idx, k] = v
    t.loc[idx, "hit_box"] = out["hit"]
    t.loc[idx, "hit_rule"] = "box"
    return t


def old_load_rows(path: Path, rows: Any) -> Runs:
    """``load_rows`` as it was before the columns: every row kept, one frame of all of them, coerced."""
    rows = list(_validated(path, rows))
    if not rows:
        raise SchemaError(f"{path}: no rows")
    for i, row in enumerate(rows):
        row.setdefault("source", "import")
        row["source"] = row["source"] or "import"
        row["run_dir"] = row.get("run_dir") or str(path)
        row["trial_key"] = row.get("trial_key") or f"{path.name}#{i}"
        row["status"] = row.get("status") or "ok"
        row["valid"] = row["status"] == "ok"
        row["simulated"] = bool(row.get("simulated") or False)
        if row.get("model_calls") is None:
            row["model_calls"] = len(row["calls"]) or 1
        for name in SPEND:
            vals = [c.get(name) for c in row["calls"]]
            if row.get(name) is None and vals and all(v is not None for v in vals):
                row[name] = sum(vals)
    calls = [{**c, "trial_key": r["trial_key"], "run_dir": r["run_dir"], "source": r["source"]}
             for r in rows for c in r["calls"]]  # fmt: skip
    frame = pd.DataFrame([{k: v for k, v in r.items() if k not in ("calls", "schema_version")} for r in rows])
    trials = coerce(_old_rescore(coerce(frame, TRIAL_COLUMNS)), TRIAL_COLUMNS)
    steps = coerce(pd.DataFrame(calls), STEP_COLUMNS)
    steps = coerce(attach_trials(steps, trials), STEP_COLUMNS)
    return Runs(trials, steps, [str(path)])


def same(a: Runs, b: Runs) -> None:
    pd.testing.assert_frame_equal(a.trials, b.trials, check_exact=True)
    pd.testing.assert_frame_equal(a.steps, b.steps, check_exact=True)
    assert a.sources == b.sources


# ------------------------------------------------------------------------------------------------ tests


@pytest.mark.parametrize(
    ("log", "fmt", "ann"), [(OMNI, "omniparser", ANN), (CROSS, "zoom", ANN), (CROSS, "zoom", None)]
)
def test_a_real_import_gives_the_frames_the_rows_kept_whole_gave(log, fmt, ann):
    path = need_thirdparty(log)
    annotations = need_thirdparty(ann) if ann else None
    new = load_import(path, fmt, annotations)
    old = old_load_rows(path, list(convert(path, fmt, annotations)))
    assert len(new.trials) >= 1581 and len(new.steps) > len(new.trials) * (fmt == "zoom")
    same(new, old)


def rows() -> list[dict[str, Any]]:
    """Hand-written rows reaching every branch: ours (source run, keyed, knobs and overrides) and another
    harness's (no key, no spend but on its calls, no calls, a missed point, epsilon given or not)."""
    call = {"index": 0, "kind": "click", "tokens_in": 900, "tokens_out": 12, "cost_usd": 0.0004, "px_x": 12.5}
    base = {"schema_version": 1, "model": "m", "method": "oneshot", "target_x0": 10, "target_y0": 10,
            "target_x1": 50.5, "target_y1": 30}  # fmt: skip
    return [
        {**base, "task": "a", "final_x": 20, "final_y": 20, "calls": [dict(call), {**call, "index": 1}]},
        {
            **base,
            "task": "b",
            "final_x": 200,
            "final_y": 20,
            "epsilon": 3,
            "image_w": 800,
            "image_h": 600,
            "override.alpha": 0.5,
            "calls": [],
        },  # fmt: skip
        {
            **base,
            "task": "c",
            "calls": [{**call, "cost_usd": None}],
            "status": "error",
            "error": "boom\nline",
        },
        {
            **base,
            "task": "d",
            "source": "run",
            "trial_key": "k1",
            "run_dir": "r",
            "hit": True,
            "within_eps": False,
            "hit_radius": True,
            "final_x": 11,
            "final_y": 11,
            "model_calls": 3,
            "overrides": "a=1",
            "sample_instruction": "the öK button",
            "hit_box": None,
            "simulated": True,
            "calls": json.dumps([call]),
        },  # fmt: skip
        {
            **base,
            "task": "e",
            "final_x": 30,
            "final_y": 15.25,
            "job": 2,
            "rep": 1,
            "start_index": 4,
            "paper_success": False,
            "calls": [{**call, "has_task": True, "cached": True}],
        },  # fmt: skip
    ]


def test_hand_written_rows_give_the_frames_the_rows_kept_whole_gave(tmp_path):
    path = tmp_path / "rows.jsonl"
    new, old = load_rows(path, rows()), old_load_rows(path, rows())
    same(new, old)
    assert list(new.trials.columns[-2:]) == ["override.alpha", "overrides"]  # the columns outside the schema
    assert new.trials["hit"].tolist() == [True, False, False, True, True]  # ours as recorded, theirs scored


def test_no_row_is_held_once_the_next_is_read(tmp_path):
    class Row(dict):  # a dict a weak reference can follow
        pass

    alive: list[weakref.ref] = []

    def stream():
        for i in range(50):
            # no gc.collect(): a row freed only by the cycle collector counts as held (stricter, and 50
            # full collections took 15 s in a loaded worker)
            held = sum(r() is not None for r in alive)
            assert held <= 1, f"row {i}: {held} earlier rows still held"  # the generator's own last one
            row = Row(
                schema_version=1,
                model="m",
                method="oneshot",
                task=f"t{i}",
                target_x0=1,
                target_y0=1,
                target_x1=5,
                target_y1=5,
                final_x=2,
                final_y=2,
                calls=[{"index": 0, "kind": "click"}],
            )
            alive.append(weakref.ref(row))
            yield row

    runs = load_rows(tmp_path / "x.jsonl", stream())
    assert len(runs.trials) == 50 and len(runs.steps) == 50


def test_a_row_costs_its_columns_a_few_bytes_each():
    cols = Columns(TRIAL_COLUMNS)
    n = 3000
    for i in range(n):
        cols.add({"model": "their-model", "method": "oneshot", "task": f"s{i % 40}", "source": "import",
                  "final_x": 10.0 + i, "final_y": 20.0, "target_x0": 10, "model_calls": 1, "hit": i % 2 == 0,
                  "hit_box": None})  # fmt: skip
    # four texts (a reference each), three floats, one integer (+ its mask byte), one boolean; hit_box: null
    assert cols.nbytes() == n * (4 * 8 + 3 * 8 + 9 + 1)
    assert len(cols.cols["task"].shared) == 40  # repeated text is one object
    assert "hit_box" not in cols.cols  # a column no row fills costs nothing until the frame
    t = cols.frame()
    assert list(t.columns) == list(TRIAL_COLUMNS) and t["hit_box"].isna().all() and t["hit"].sum() == n // 2
    assert t["task"].iloc[41] == "s1" and t["final_x"].iloc[-1] == 10.0 + n - 1


def test_text_stops_being_shared_past_the_bound():
    cols = Columns({"trial_key": "string"})
    for i in range(SHARE_UP_TO + 10):
        cols.add({"trial_key": f"k{i}"})
    assert len(cols.cols["trial_key"].shared) == SHARE_UP_TO
    assert cols.frame()["trial_key"].iloc[-1] == f"k{SHARE_UP_TO + 9}"


# ------------------------------------------------------------------ other harnesses' logs, streamed


def zoom_record(i: int) -> dict[str, Any]:
    return {"idx": i, "instruction": f"click {i}", "img_width": 1000, "img_height": 800,
            "bbox": [0.1, 0.1, 0.2, 0.2], "step1": [150, 150], "crop_box": [0, 0, 500, 400],
            "step2": [300, 300], "final": [0.15, 0.15], "correct": True}  # fmt: skip


def test_a_json_array_log_is_read_one_record_at_a_time(tmp_path):
    from dvoc_bench.analysis.foreign import read_records

    path = tmp_path / "zoom.json"  # indented like the source's files, and broken at its very end
    path.write_text(json.dumps([zoom_record(i) for i in range(3000)], indent=2)[:-1] + "}")
    records = read_records(path, "zoom")
    assert next(records)["idx"] == 0  # given before the end was read
    with pytest.raises(SchemaError, match=r"zoom.json: element 2999: .*; --format zoom"):
        list(records)
    rows = convert(tmp_path / "zoom.json", "zoom")
    assert next(rows)["method"] == "zoom" and next(rows)["method"] == "zoom_step1"


def test_a_jsonl_log_is_read_one_line_at_a_time(tmp_path):
    from dvoc_bench.analysis.foreign import read_records

    rec = {"prompt_to_evaluate": "x", "pred": [1, 2], "bbox": [0, 0, 9, 9], "correctness": "correct"}
    path = tmp_path / "log.json"
    path.write_text("\n".join(json.dumps({**rec, "idx": i}) for i in range(500)) + "\n{not json\n")
    records = read_records(path, "sspro")
    assert [next(records)["idx"] for _ in range(500)] == list(range(500))
    with pytest.raises(SchemaError, match=r"log.json: line 501: not JSON"):
        next(records)


def test_a_record_longer_than_a_row_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    import dvoc_bench.analysis.foreign as foreign

    monkeypatch.setattr(foreign, "MAX_ROW_BYTES", 4096)
    path = tmp_path / "zoom.json"
    path.write_text(json.dumps([zoom_record(0), {**zoom_record(1), "instruction": "x" * 10_000}]))
    with pytest.raises(SchemaError, match=r"element 1: longer than 0.00390625 MiB; not read; --format zoom"):
        list(foreign.read_records(path, "zoom"))
    lines = tmp_path / "log.json"
    rec = {"prompt_to_evaluate": "x" * 5000, "pred": None, "bbox": [0, 0, 9, 9], "correctness": "wrong"}
    lines.write_text(json.dumps({**rec, "prompt_to_evaluate": "y"}) + "\n" + json.dumps(rec) + "\n")
    with pytest.raises(SchemaError, match=r"log.json: line 2: longer than"):
        list(foreign.read_records(lines, "sspro"))


def test_the_array_reader_holds_one_element(tmp_path):
    import io

    from dvoc_bench.core.jsonread import array_items

    class Counting(io.BytesIO):
        def read(self, n=-1):
            out = super().read(n)
            self.got = getattr(self, "got", 0) + len(out)
            return out

    data = json.dumps([{"i": i, "s": "[é" * 50} for i in range(20_000)]).encode()
    f = Counting(data)
    items = array_items(f, "w", chunk=4096)
    assert next(items)["i"] == 0 and f.got == 4096 < len(data) // 100
    assert [x["i"] for x in items] == list(range(1, 20_000)) and f.got == len(data)


# ------------------------------------------------------------------ the report's bootstrap, in blocks


@pytest.mark.parametrize("n", [2, 7, 1000, 4097, 30_001])
def test_the_bootstrap_draws_in_blocks_the_interval_drawing_all_at_once_gives(monkeypatch, n):
    import numpy as np

    from dvoc_bench.analysis import honest

    class Recording:  # the generator, recording how many draws each call asks for
        def __init__(self, seed):
            self.rng, self.sizes = np.random.default_rng(seed), []

        def integers(self, lo, hi, size):
            self.sizes.append(size[0] * size[1])
            return self.rng.integers(lo, hi, size=size)

    monkeypatch.setattr(honest, "BOOT_CELLS", 1000)
    x = np.random.default_rng(99).normal(size=n) * 40
    for seed in (0, 5):
        rec = Recording(seed)
        got = honest.bootstrap_ci(x, rec, n_boot=257)  # type: ignore[arg-type]
        assert max(rec.sizes) <= max(n, 1000) and sum(rec.sizes) == 257 * n
        xs = np.sort(x)  # the interval as drawn all at once (257 x n draws held)
        means = xs[np.random.default_rng(seed).integers(0, n, size=(257, n))].mean(axis=1)
        want = np.quantile(means, [0.025, 0.975])
        assert np.allclose(got, want, rtol=1e-13, atol=0)  # equal but for a sum's last bit (SIMD alignment)


def test_the_evaluators_indented_log_is_one_document_read_whole(tmp_path):
    from dvoc_bench.analysis.foreign import read_records

    rec = {"prompt_to_evaluate": "x", "pred": [1, 2], "bbox": [0, 0, 9, 9], "correctness": "correct"}
    path = tmp_path / "eval.json"
    path.write_text(json.dumps({"metrics": {}, "details": [{**rec, "idx": i} for i in range(3)]}, indent=4))
    assert [r["idx"] for r in read_records(path, "sspro")] == [0, 1, 2]
    path.write_text(json.dumps({"metrics": {}}, indent=4))
    with pytest.raises(SchemaError, match=r"field `details`: missing"):
        list(read_records(path, "sspro"))


@pytest.mark.parametrize("n", [3, 999, 4001])
def test_the_cost_per_success_resamples_in_blocks_what_drawing_all_at_once_gives(monkeypatch, n):
    """The cost per successful click's bootstrap drew n_boot x samples indices at once (2000 x 1,000,000
    samples: 16 GB of indices, and as much again per gathered column); it draws whole resamples in
    blocks of BOOT_CELLS indices, in the generator's order."""
    import numpy as np

    from dvoc_bench.analysis import budget, honest

    sizes: list[int] = []

    class Recording:  # the group's generator, recording how many draws each call asks for
        def __init__(self, seed, key):
            self.rng = honest.group_rng(seed, key)

        def integers(self, lo, hi, size):
            sizes.append(size[0] * size[1])
            return self.rng.integers(lo, hi, size=size)

    monkeypatch.setattr(budget, "BOOT_CELLS", 1000)
    monkeypatch.setattr(budget, "group_rng", Recording)
    r = np.random.default_rng(n)
    t = pd.DataFrame({"model": "m", "method": "oneshot", "task": [f"s{i % n}" for i in range(2 * n)],
                      "status": "ok", "valid": True, "hit": r.random(2 * n) < 0.3, "simulated": False,
                      "model_calls": r.integers(1, 4, 2 * n), "tokens_in": 900.0, "tokens_out": 12.0,
                      "cost_usd": r.random(2 * n) / 1000})  # fmt: skip
    got = budget.cost_per_success(t, n_boot=301, seed=3).iloc[0]
    assert max(sizes) <= max(n, 1000) and sum(sizes) == 301 * n  # one draw shared by the three columns
    per = t.assign(s=t["hit"].astype(float), calls=t["model_calls"].astype(float), tokens=912.0,
                   usd=t["cost_usd"]).groupby("task", sort=True)  # fmt: skip
    per = per[["s", "calls", "tokens", "usd"]].sum()
    idx = honest.group_rng(3, ("cost_per_success", "m", "oneshot")).integers(0, n, size=(301, n))
    s = per["s"].to_numpy()[idx].sum(axis=1)
    for col in ("calls", "tokens", "usd"):  # the interval as drawn all at once (301 x n indices held)
        boot = per[col].to_numpy()[idx].sum(axis=1) / np.where(s > 0, s, np.nan)
        with np.errstate(invalid="ignore"):  # a quantile between two infinite ratios is NaN: inf
            want = np.quantile(np.where(np.isnan(boot), np.inf, boot), [0.025, 0.975])
        want = np.nan_to_num(want, nan=np.inf)
        assert np.allclose([got[f"{col}_lo"], got[f"{col}_hi"]], want, rtol=1e-13, atol=0), col


# ------------------------------------------------------------------ the report's tables on an import


def _one_call_rows(n: int):
    for i in range(n):
        yield {"schema_version": 1, "model": "their-model", "method": "oneshot", "task": f"s{i}",
               "target_x0": 10, "target_y0": 10, "target_x1": 50, "target_y1": 30, "final_x": 10 + i % 60,
               "final_y": 20, "calls": [{"index": 0, "kind": "click", "tokens_in": 900, "tokens_out": 12,
                                         "cost_usd": 0.0004}]}  # fmt: skip


def test_the_report_tables_copy_the_columns_they_read_not_the_schema(monkeypatch, tmp_path):
    """The tables the report runs on our trials grouped and filtered whole frames (154 trial columns,
    ~1 KB a trial, copied for each group) and drew their bootstraps at once: a table's memory grew with
    the schema's width times the trials. Measured as the traced peak of the tables at 1,000 and 3,000
    imported trials: what a further trial adds (the frames themselves are built before tracing)."""
    import tracemalloc

    from dvoc_bench.analysis import budget, compare, honest, import_check, paper, phones, plots
    from dvoc_bench.analysis.schema import keep_rows

    monkeypatch.setattr(honest, "BOOT_CELLS", 20_000)
    monkeypatch.setattr(budget, "BOOT_CELLS", 20_000)
    by = ["model", "method"]

    def peak(n: int) -> int:
        runs = load_rows(tmp_path / f"{n}.jsonl", _one_call_rows(n))
        t, s = runs.trials, runs.steps
        tracemalloc.start()
        try:  # the report's tables of our trials, as _runs_section and equal_cost.blocks call them
            honest.summary(t, "hit", by=by, n_boot=500)
            honest.rules_side_by_side(t, by=by)
            honest.with_assumed(paper.table_4_1(t), t, by)
            budget.curve(t, s, "hit", by=by)
            budget.stop_rules(t, s, "hit", by=by)
            budget.cost_per_success(t, "hit", by=by, n_boot=500)
            budget.lacking(t, s)
            # and those that filter the whole frames (keep_rows: the import's empty columns not copied)
            compare.method_pairs(t, "hit")
            honest.frame_audit_points(s)
            honest.frame_audit_offsets(keep_rows(s, s["kind"] == "verify"))
            import_check.blocks(t)
            phones.table(t)
            plots.distance_cdf(t)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    per_trial = (peak(3000) - peak(1000)) / 2000
    # ~1.4 KB: the narrow copies, the iterates' frame and the pairs; the pairs and the distance CDF
    # filtering whole frames: ~2.2 KB; every table copying whole frames: ~3.6 KB (before the pairs and the
    # CDF were measured here); with the bootstraps' indices drawn at once as well: ~10 KB
    assert per_trial < 1800, f"the report's tables hold {per_trial / 1024:.1f} KB per imported trial"
