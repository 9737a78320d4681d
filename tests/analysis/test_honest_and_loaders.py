"""dvoc_bench.analysis on our own records: loaders, honest tables, intervals, paired comparisons, the frame
audit, the paper-rule tables, plots and the report CLI (fresh in-process simulated sweeps)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dvoc_bench.analysis import Runs, compare, honest, load_runs, paper, plots
from dvoc_bench.analysis.loaders import CACHE_DIR, find_run_dirs, newest_run
from dvoc_bench.analysis.schema import STEP_COLUMNS, TRIAL_COLUMNS
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[2]


def sweep(run_dir: Path, *overrides: str) -> Path:
    """A fresh simulated sweep, in process, into ``run_dir``."""
    run_sweep(quick_setup(overrides), run_dir)
    return run_dir


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    return sweep(tmp_path_factory.mktemp("run"), "smoke=true")


@pytest.fixture(scope="module")
def runs(run_dir) -> Runs:
    return load_runs(run_dir, cache=False)


def raw_trials(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "trials.jsonl").read_text().splitlines() if x.strip()]


# ----------------------------------------------------------------------------------------------- loaders


def test_load_runs_types_every_column_and_keeps_every_record(run_dir, runs):
    raw = raw_trials(run_dir)
    t, s = runs.trials, runs.steps
    assert len(t) == len(raw) > 0
    n_steps = sum(1 for x in (run_dir / "steps.jsonl").read_text().splitlines() if x.strip())
    assert len(s) == n_steps > 0
    for col, dtype in TRIAL_COLUMNS.items():
        assert str(t[col].dtype).lower() == dtype.lower() or (
            dtype == "string" and t[col].dtype == "string"
        ), col
    for col, dtype in STEP_COLUMNS.items():
        assert str(s[col].dtype).lower() == dtype.lower() or (
            dtype == "string" and s[col].dtype == "string"
        ), col
    assert "prompt" not in s.columns  # text columns only with text=True
    # flattened values equal the records
    by_key = {r["trial_key"]: r for r in raw}
    for _, row in t.iterrows():
        r = by_key[row["trial_key"]]
        assert row["simulated"] == r["simulated"]
        assert row["model"] == r["model"] and row["method"] == r["method"]
        if r["final_point"] is not None:
            assert row["final_x"] == pytest.approx(r["final_point"][0])
            assert row["final_y"] == pytest.approx(r["final_point"][1])
        assert row["target_x0"] == r["target_box"][0] and row["target_y1"] == r["target_box"][3]
        assert row["hit"] == r["hit"] and row["within_eps"] == r["within_eps"]
        assert row["image_w"] == 800 and row["image_h"] == 600  # read from the frames the model saw
    # simulated models are flagged, the model-free centre baseline is not
    assert t.loc[t["model"].str.startswith("sim-"), "simulated"].all()
    assert not t.loc[t["method"] == "centre", "simulated"].any()
    assert runs.simulated


def test_steps_carry_their_trial_and_the_true_offset(runs):
    s = runs.steps
    v = s[s["kind"] == "verify"]
    assert len(v) > 0 and v["model"].notna().all() and v["task"].notna().all()
    np.testing.assert_allclose(v["true_dx"], v["target_cx"] - v["draft_x"])
    np.testing.assert_allclose(np.hypot(v["true_dx"], v["true_dy"]), v["true_dist_px"], atol=0.01)
    # the v1 prompts carry the task instruction
    assert s.loc[s["kind"] != "baseline", "has_task"].dropna().all()


def test_text_columns_on_request(run_dir):
    r = load_runs(run_dir, text=True, cache=False)
    assert r.steps["prompt"].notna().any()
    assert "Click" in r.steps["prompt"].dropna().iloc[0]


def test_parquet_cache_is_used_and_invalidated(tmp_path):
    run = sweep(tmp_path / "r", "smoke=true", "models=[sim-ideal]", "methods=[dvoc]")
    first = load_runs(run)
    assert (run / CACHE_DIR / "steps.parquet").is_file()
    again = load_runs(run)
    pd.testing.assert_frame_equal(first.trials, again.trials)
    pd.testing.assert_frame_equal(first.steps, again.steps)
    # appending a trial line changes size/mtime: the cache is rebuilt, the new trial appears
    line = (run / "trials.jsonl").read_text().splitlines()[0]
    rec = json.loads(line)
    rec["trial_key"] = "extra"
    with (run / "trials.jsonl").open("a") as f:
        f.write(json.dumps(rec) + "\n")
    assert "extra" in set(load_runs(run).trials["trial_key"])


def test_multirun_jobs_merge_with_override_columns(tmp_path):
    sweep_dir = tmp_path / "multirun"
    for job, alpha in enumerate(("decay", "constant")):
        d = sweep(
            sweep_dir / str(job),
            "smoke=true",
            "models=[sim-gemma-4-26b]",
            "methods=[dvoc]",
            f"alphas=[{alpha}]",
        )
        (d / ".hydra").mkdir()
        (d / ".hydra" / "overrides.yaml").write_text(
            f"- smoke=true\n- alphas=[{alpha}]\n- loop.epsilon=30\n- hydra.verbose=true\n"
        )
    (sweep_dir / "multirun.yaml").write_text("hydra: {}\n")
    assert [p.name for p in find_run_dirs([sweep_dir])] == ["0", "1"]
    r = load_runs(sweep_dir)
    t = r.trials
    assert set(t["job"].dropna()) == {0, 1}
    assert (t.groupby("job")["override.alphas"].first() == ["[decay]", "[constant]"]).all()
    assert (t.groupby("job")["alpha"].first() == ["decay", "constant"]).all()
    assert t["override.loop.epsilon"].eq(30).all() and t["override.smoke"].eq(True).all()
    assert "override.hydra.verbose" not in t.columns
    assert len(r.sources) == 2 and newest_run(tmp_path) in {sweep_dir / "0", sweep_dir / "1"}
    # steps of both jobs are there and keyed by run directory
    assert set(r.steps["run_dir"]) == {str(sweep_dir / "0"), str(sweep_dir / "1")}
    # select follows the steps
    sub = r.select(job=1)
    assert set(sub.steps["run_dir"]) == {str(sweep_dir / "1")} and len(sub.trials) == (t["job"] == 1).sum()


def test_missing_run_dir_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no run directory"):
        load_runs(tmp_path)
    with pytest.raises(FileNotFoundError, match="no such run directory"):
        load_runs(tmp_path / "nope")


# --------------------------------------------------------------------------------------------- intervals


def test_wilson_matches_hand_computation():
    # (k, n) -> interval computed by hand from p, z = 1.95996 (textbook values for 0/10 and 1/2)
    assert honest.wilson(0, 10) == pytest.approx((0.0, 0.27753), abs=1e-5)
    assert honest.wilson(10, 10) == pytest.approx((0.72247, 1.0), abs=1e-5)
    assert honest.wilson(1, 2) == pytest.approx((0.09453, 0.90547), abs=1e-5)
    assert honest.wilson(72, 114) == pytest.approx((0.54009, 0.71449), abs=1e-5)
    assert all(math.isnan(x) for x in honest.wilson(0, 0))
    with pytest.raises(ValueError):
        honest.wilson(3, 2)


def test_bootstrap_is_seeded_and_brackets_the_mean():
    x = np.arange(20.0)
    a = honest.bootstrap_ci(x, np.random.default_rng(1))
    b = honest.bootstrap_ci(x, np.random.default_rng(1))
    assert a == b
    assert a[0] < x.mean() < a[1]
    # the standard error of the mean of 0..19 is 1.29: a 95 % interval is about +-2.5
    assert 4 < a[1] - a[0] < 6.5
    assert honest.bootstrap_ci([5.0], np.random.default_rng(0)) == (5.0, 5.0)


# ------------------------------------------------------------------------------------------------ tables


def test_summary_equals_a_hand_count(run_dir, runs):
    raw = raw_trials(run_dir)
    s = honest.summary(runs.trials, "hit", seed=3)
    for _, row in s.iterrows():
        group = [r for r in raw if r["model"] == row["model"] and r["method"] == row["method"]]
        ok = [r for r in group if r["status"] == "ok"]
        k = sum(r["hit"] for r in ok)
        assert (row["total"], row["valid"], row["success"]) == (len(group), len(ok), k)
        assert row["rate"] == pytest.approx(k / len(ok))
        # the clustered interval, clusters by hand: the sample (its start points and repeats are one)
        cells: dict[str, list[int]] = {}
        for r in ok:
            cells.setdefault(r["task"], []).append(int(r["hit"]))
        kc, nc = [sum(v) for v in cells.values()], [len(v) for v in cells.values()]
        want = honest.rate_interval(k, len(ok), clusters=(kc, nc))
        assert (row["rate_lo"], row["rate_hi"]) == pytest.approx(want)
        if 0 < k < len(ok) and len(cells) < len(ok):
            assert row["rate_hi"] - row["rate_lo"] >= 0.999 * np.subtract(*honest.wilson(k, len(ok))[::-1])
        d = [r["final_dist_px"] for r in ok]
        assert row["mean_dist"] == pytest.approx(sum(d) / len(d))
        assert row["dist_lo"] <= row["mean_dist"] <= row["dist_hi"]
        assert row["rule"] == "hit"
        assert row["simulated"] == any(r["simulated"] for r in group)
    # deterministic for a seed, whatever the row order
    s2 = honest.summary(runs.trials.sample(frac=1, random_state=7), "hit", seed=3)
    pd.testing.assert_frame_equal(s, s2)
    with pytest.raises(ValueError, match="unknown rule"):
        honest.summary(runs.trials, "success")


def test_rules_differ_only_by_rule(runs):
    side = honest.rules_side_by_side(runs.trials)
    for rule in honest.RULES:
        s = honest.summary(runs.trials, rule, n_boot=10)
        np.testing.assert_allclose(side[rule].to_numpy(), s["rate"].to_numpy())


def test_cost_per_success(runs):
    c = honest.cost_table(runs.trials, "hit")
    assert len(c) and (c["rule"] == "hit").all()
    t = runs.trials
    for _, row in c.iterrows():
        g = t[(t["model"] == row["model"]) & (t["method"] == row["method"])]
        assert row["cost_usd"] == pytest.approx(g["cost_usd"].fillna(0).sum())
        k = int(g.loc[g["valid"], "hit"].sum())
        assert row["cost_per_success"] == (pytest.approx(row["cost_usd"] / k) if k else math.inf)
    # a trial with a call and no recorded cost makes the group's cost unknown
    t2 = t.copy()
    idx = t2.index[(t2["model_calls"] > 0)][0]
    t2.loc[idx, "cost_usd"] = np.nan
    m, meth = t2.loc[idx, "model"], t2.loc[idx, "method"]
    c2 = honest.cost_table(t2, "hit")
    assert not ((c2["model"] == m) & (c2["method"] == meth)).any()


def test_the_cost_table_keeps_the_rows_assumption_markers(runs):
    """A zoom row of a calibrated profile reads ``[SIMULATED; crops/zoom assumed]`` in the report's cost
    table as in every other table (the table used to drop the markers)."""
    from dvoc_bench.analysis.markdown import label_models

    t = runs.trials.copy()
    sim = t.index[t["simulated"].astype(bool)]
    assert len(sim)
    m, meth = t.loc[sim[0], "model"], t.loc[sim[0], "method"]
    grp = (t["model"] == m) & (t["method"] == meth)
    t["simulated_assumptions"] = [["crops/zoom assumed"] if g else [] for g in grp]
    labelled = label_models(honest.cost_table(t, "hit"))
    assert f"{m} [SIMULATED; crops/zoom assumed]" in set(labelled["model"])
    assert "assumed" not in labelled


def test_paired_comparison_on_same_starts(runs):
    t = runs.trials
    pr = compare.method_pairs(t, "hit")
    pr = pr[(pr["a"] == "dvoc") & (pr["b"] == "oneshot")]
    assert len(pr) == t.loc[t["method"] == "dvoc", "model"].nunique()
    for _, row in pr.iterrows():
        d = t[(t["model"] == row["model"]) & (t["method"] == "dvoc") & t["valid"]]
        o = t[(t["model"] == row["model"]) & (t["method"] == "oneshot") & t["valid"]]
        m = d.merge(o, on=["task", "start_index", "rep"], suffixes=("_d", "_o"))
        assert row["pairs"] == len(m)
        assert row["a_only"] == int((m["hit_d"] & ~m["hit_o"]).sum())
        assert row["b_only"] == int((~m["hit_d"] & m["hit_o"]).sum())
        assert row["diff"] == pytest.approx(m["hit_d"].mean() - m["hit_o"].mean())
        assert row["mcnemar_p"] == honest.mcnemar_exact(row["a_only"], row["b_only"])
    # two settings of a knob are two variants, each paired on its own, never pooled
    dup = pd.concat([t, t[t["method"] == "dvoc"].assign(alpha="constant")])
    split = compare.method_pairs(dup, "hit", split=["alpha"])
    assert {"dvoc alpha=constant", "oneshot"} <= set(split["a"]) | set(split["b"])
    pooled = compare.method_pairs(dup, "hit", split=[])  # not one trial per key on the dvoc side: no pair
    assert pooled.empty or not ((pooled["a"] == "dvoc") & (pooled["b"] == "oneshot")).any()


def test_frame_audit_finds_the_frame_of_a_norm1000_model(tmp_path):
    # 30 one-shot answers per model (a smoke run's 4 are too few for a 90 % threshold with 3 % outliers)
    run = sweep(
        tmp_path / "r",
        "tasks=[S1,S2,S3]",
        "models=[sim-gemma-4-26b,sim-ideal]",
        "methods=[dvoc,oneshot]",
        "repeats=2",
    )
    r = load_runs(run, cache=False)
    pts = honest.frame_audit_points(r.steps, by=("model",))
    gem = pts[pts["model"] == "sim-gemma-4-26b"].set_index("reading")
    ideal = pts[pts["model"] == "sim-ideal"].set_index("reading")
    assert gem.loc["norm1000", "as_recorded"] and ideal.loc["pixel", "as_recorded"]
    assert gem.loc["norm1000", "hit_radius"] > 0.9 > 0.1 > gem.loc["pixel", "hit_radius"]
    assert ideal.loc["pixel", "hit_radius"] > 0.9 > 0.1 > ideal.loc["norm1000", "hit_radius"]
    off = honest.frame_audit_offsets(r.steps[r.steps["kind"] == "verify"]).set_index("model")
    assert (
        off.loc["sim-gemma-4-26b", "frame_x"] == "norm1000"
        and off.loc["sim-gemma-4-26b", "frame_y"] == "norm1000"
    )
    assert off.loc["sim-ideal", "frame_x"] == "pixel" and off.loc["sim-ideal", "frame_y"] == "pixel"
    assert off.loc["sim-gemma-4-26b", "gain0_y"] == pytest.approx(1000 / 600, rel=0.15)


# ----------------------------------------------------------------------------------------- paper tables


def _frame(rows: list[dict]) -> pd.DataFrame:
    from dvoc_bench.analysis.schema import coerce

    base = dict(source="run", status="ok", valid=True, simulated=False, method="dvoc", iterations=4)
    return coerce(pd.DataFrame([{**base, **r} for r in rows]), TRIAL_COLUMNS)


def test_paper_rules_raw_vs_protocol_rate_and_means_over_valid():
    t = _frame(
        [
            dict(model="m", hit_radius=True, final_dist_px=10.0, iterations=2),
            dict(model="m", hit_radius=False, final_dist_px=50.0, iterations=6),
            dict(
                model="m", status="error", valid=False, hit_radius=False, final_dist_px=np.nan, iterations=0
            ),
            dict(model="m", status="skipped", valid=False, hit_radius=False, final_dist_px=np.nan),
        ]
    )
    row = paper.table_4_1(t).iloc[0]
    assert (row["total"], row["errors"], row["valid"], row["success"]) == (3, 1, 2, 1)  # skipped left out
    assert row["raw_rate"] == pytest.approx(1 / 3) and row["proto_rate"] == pytest.approx(1 / 2)
    assert row["mean_dist"] == pytest.approx(30.0) and row["mean_iters"] == pytest.approx(4.0)


def test_paper_success_column_wins_and_excluded_models_drop():
    t = _frame(
        [
            dict(
                source="upstream",
                model="gemma-4-26b",
                paper_success=False,
                hit_radius=True,
                final_dist_px=5.0,
                paper_final_dist=5.1,
            ),
            dict(source="upstream", model="gemma-4-26b-via-or", paper_success=True, hit_radius=True),
            dict(source="upstream", model="nemotron-30b", status="error", valid=False),
        ]
    )
    out = paper.table_4_1(t)
    assert list(out["model"]) == ["gemma-4-26b"]
    assert out.iloc[0]["success"] == 0 and out.iloc[0]["mean_dist"] == pytest.approx(5.1)


def test_ablation_tables_and_their_printed_medians():
    rows = [
        dict(model="m", alpha=a, predict=p, hit_radius=d < 30, final_dist_px=d)
        for a, p, ds in (("decay", "relative", (22.0, 23.2)), ("constant", "absolute", (10.0, 11.0, 12.0)))
        for d in ds
    ]
    t53 = paper.table_5_3(_frame(rows))
    assert list(t53["alpha"]) == ["decay", "constant"]  # the paper's row order
    assert list(t53["trials"]) == [2, 3] and list(t53["success"]) == [2, 3]
    assert t53.iloc[0]["median_dist"] == pytest.approx(22.6) and t53.iloc[1]["mean_dist"] == pytest.approx(
        11.0
    )
    # Table 5.1 prints medians truncated (22.6 -> 22), Table 5.2 rounded (102.7 -> 103)
    t51 = paper.table_5_1(_frame(rows))
    assert list(t51["predict"]) == ["relative", "absolute"]
    assert paper.formatted("5.1", t51).iloc[0]["median_dist"] == "22px"
    t52 = paper.table_5_2(_frame([dict(model="m", overlay="none", final_dist_px=102.7, hit_radius=False)]))
    assert paper.formatted("5.2", t52).iloc[0]["median_dist"] == "103px"


def test_reproduction_check_flags_a_difference():
    t = _frame(
        [dict(model="m", predict="relative", hit_radius=True, final_dist_px=26.8, iterations=5)] * 5
        + [dict(model="m", predict="relative", hit_radius=False, final_dist_px=26.8, iterations=5)]
    )
    chk = paper.reproduction_check("5.1", paper.table_5_1(t)).set_index(["row", "column"])
    assert chk.loc[("relative", "mean_dist"), "match"]
    assert chk.loc[("relative", "mean_iters"), "match"]
    assert not chk.loc[("relative", "median_dist"), "match"]  # 26 printed vs 22 published
    assert chk.loc[("absolute", "rate"), "reproduced"] == "(no data)"


# ------------------------------------------------------------------------------------------------- plots


def test_plots_of_simulated_data_say_so(runs):
    summ = honest.summary(runs.trials, "hit", n_boot=10)
    figs = [
        plots.success_bars(summ),
        plots.distance_vs_iteration(runs.steps),
        plots.heatmap(runs.trials),
        plots.distance_cdf(runs.trials),
        plots.trajectories(runs.trials, runs.steps, "S1", model="sim-gemma-4-26b"),
        plots.frame_audit_bars(honest.frame_audit_points(runs.steps)),
    ]
    for fig in figs:
        assert "SIMULATED" in plots.title_of(fig)
    real = runs.trials[~runs.trials["simulated"]]
    assert "SIMULATED" not in plots.title_of(plots.heatmap(real, method="centre"))
    traj = figs[4].axes[0]
    assert traj.images and traj.images[0].get_array().shape == (600, 800, 3)  # drawn on the scene image


# ------------------------------------------------------------------------------------------- report, CLI


@pytest.mark.e2e
def test_report_cli_writes_tables_and_figures(run_dir, tmp_path):
    out = tmp_path / "rep"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "dvoc_bench.report",
            str(run_dir),
            "--rule",
            "within_eps",
            "--out",
            str(out),
            "--n-boot",
            "50",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert p.returncode == 0, p.stderr
    md = (out / "report.md").read_text()
    assert md.strip() in p.stdout
    assert "rule **`within_eps`**" in md and "[SIMULATED]" in md
    assert "Coordinate-frame audit" in md and "Paired" in md and "Cost per successful click" in md
    pngs = sorted((out / "figures").glob("*.png"))
    assert len(pngs) >= 5 and all(f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for f in pngs)
    bad = subprocess.run(
        [sys.executable, "-m", "dvoc_bench.report", str(tmp_path / "none")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert bad.returncode == 2 and "no such run directory" in bad.stderr
    assert not (tmp_path / "none").exists()  # bad input writes nothing


@pytest.mark.e2e
def test_pandas_and_matplotlib_stay_out_of_the_cli_paths():
    code = (
        "import sys, dvoc_bench, dvoc_bench.report\n"
        "heavy = [m for m in ('pandas', 'matplotlib') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert p.returncode == 0 and p.stdout.strip() == "", p.stdout + p.stderr
    h = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "dvoc_bench.report", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert h.returncode == 0 and "--upstream" in h.stdout
    assert "pandas" not in h.stderr and "matplotlib" not in h.stderr
    m = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "dvoc_bench", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert m.returncode == 0
    assert "pandas" not in m.stderr and "matplotlib" not in m.stderr


def test_the_newest_run_passes_over_a_run_whose_every_trial_failed(tmp_path, caplog):
    """Issue 52, item 8: a one-task probe that could not render leaves a newer run of errored trials; the
    notebooks' "newest run" is the newest with a finished trial, and the one passed over is named."""
    import json as _json
    import os as _os

    good, bad = tmp_path / "quick" / "a", tmp_path / "probe" / "b"
    for d, status in ((good, "ok"), (bad, "error")):
        d.mkdir(parents=True)
        (d / "trials.jsonl").write_text(_json.dumps({"trial_key": "k", "status": status}) + "\n")
    _os.utime(good / "trials.jsonl", (1_000_000, 1_000_000))
    with caplog.at_level("WARNING"):
        assert newest_run(tmp_path) == good
    assert str(bad) in caplog.text
    (good / "trials.jsonl").write_text(_json.dumps({"trial_key": "k", "status": "error"}) + "\n")
    _os.utime(good / "trials.jsonl", (1_000_000, 1_000_000))
    assert newest_run(tmp_path) == bad  # none finished: the newest, as before


def test_a_reworded_instruction_leaves_has_task_unknown(tmp_path):
    # issue 55: a trial under a wording rule (or ask_missing) is prompted with a rewritten instruction, not
    # the definition file's, so "the prompt carries the task" cannot be read from it; it was recorded as
    # False (the frame audit split every reworded answer off as task-less)
    given = load_runs(sweep(tmp_path / "given", "tasks=[S1,S3]", "models=[sim-gemma-4-26b]",
                            "methods=[oneshot]"), cache=False)  # fmt: skip
    assert given.steps["has_task"].notna().all() and given.steps["has_task"].all()
    for name, knob in (("rel", "wording=relational"), ("missing", "absent.variant=ask_missing")):
        r = load_runs(sweep(tmp_path / name, "tasks=[S1,S3]", "models=[sim-gemma-4-26b]",
                            "methods=[oneshot]", knob), cache=False)  # fmt: skip
        assert len(r.steps) and r.steps["has_task"].isna().all(), name
    # the audit table of the report: known rows say yes, the unknown ones "-" (numpy's bool printed "True")
    from dvoc_bench.analysis.markdown import md_table

    table = md_table(honest.frame_audit_points(pd.concat([given.steps, r.steps], ignore_index=True)))
    cells = {line.split("|")[3].strip() for line in table.splitlines()[2:]}
    assert cells == {"yes", "-"}, cells
