"""The report never drops a distinct trial (issue 47): a multirun over a settings block reports one row per
value; two records of one key are pooled only when they are the same trial run again, and refused otherwise,
naming what differs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dvoc_bench.analysis.honest import PoolingError, without_repeats
from dvoc_bench.analysis.loaders import load_runs
from dvoc_bench.analysis.report import build_report
from dvoc_bench.core.records import TrialSpec
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.sweep import run_sweep

SWEEP = [
    "models=[sim-gemma-4-31b]",
    "tasks=[S1,S2]",
    "methods=[dvoc,oneshot]",
    "alphas=[adaptive]",
    "run.quiet=true",
]
"""The issue's multirun: the adaptive schedule's start, two jobs."""


@pytest.fixture(scope="module")
def multirun(tmp_path_factory) -> Path:
    """Two jobs of ``-m adaptive.start=1.0,0.25`` as Hydra lays them out (``<sweep>/0``, ``<sweep>/1``)."""
    root = tmp_path_factory.mktemp("multirun")
    for job, start in enumerate(("1.0", "0.25")):
        run_sweep(quick_setup([*SWEEP, f"adaptive.start={start}"]), root / str(job))
    return root


def _rows(markdown: str, heading: str) -> list[list[str]]:
    part = markdown.split(heading, 1)[1].split("\n")
    first = next(i for i, ln in enumerate(part) if ln.startswith("|"))
    lines = []
    for ln in part[first:]:
        if not ln.startswith("|"):
            break
        lines.append(ln)
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    return [dict(zip(header, [c.strip() for c in ln.strip("|").split("|")], strict=True)) for ln in lines[2:]]


def test_a_multirun_over_a_settings_block_reports_both_jobs_as_two_rows(multirun, tmp_path):
    runs = load_runs(multirun)
    dvoc = runs.trials[runs.trials["method"] == "dvoc"]
    assert dvoc["trial_key"].nunique() == 20  # 10 per job, none shared
    by_start = dvoc.groupby("adaptive")["hit"].mean().to_dict()
    assert set(by_start) == {"-", "start=0.25"}
    text, _ = build_report([str(multirun)], [], "hit", tmp_path, figures=False, n_boot=20)
    rows = _rows(text, "### Success by model and method")
    dvoc_rows = {r["adaptive"]: r for r in rows if r.get("method") == "dvoc"}
    assert set(dvoc_rows) == {"-", "start=0.25"}
    for value, row in dvoc_rows.items():
        assert row["valid/total"] == "10/10"
        assert row["rate [95% CI]"].startswith(f"{100 * by_start[value]:.1f}%")
    assert by_start["-"] != by_start["start=0.25"]  # the two jobs' outcomes differ: pooling would hide one
    # the one-shot trials do not use the block: the same trial in both jobs, counted once and said so
    one = [r for r in rows if r.get("method") == "oneshot"]
    assert len(one) == 1 and one[0]["valid/total"] == "10/10"
    assert "10 trials are the same trial" in text


NEW_FIELDS = ("sweep_seed", "adaptive", "sampling", "overlay_style", "image", "retry_rule", "verify_click",
              "model_config")  # fmt: skip
"""The spec fields the key gained when it came to see every setting."""


def _as_the_old_key_would(run_dir: Path) -> None:
    """Rewrite a run's records as the code before issue 47 made them: the adaptive block outside the spec,
    so its trials share their keys with the other job's."""
    renamed: dict[str, str] = {}
    lines = []
    for line in (run_dir / "trials.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec["adaptive"] != "-":
            fields = {k: rec[k] for k in TrialSpec.__dataclass_fields__}
            old = TrialSpec(**{**fields, "adaptive": "-"}).key()
            renamed[rec["trial_key"]] = old
            rec["trial_key"] = old
        for f in NEW_FIELDS:  # the old code wrote none of them
            rec.pop(f, None)
        lines.append(json.dumps(rec))
    (run_dir / "trials.jsonl").write_text("\n".join(lines) + "\n")
    steps = []
    for line in (run_dir / "steps.jsonl").read_text().splitlines():
        rec = json.loads(line)
        rec["trial_key"] = renamed.get(rec["trial_key"], rec["trial_key"])
        steps.append(json.dumps(rec))
    (run_dir / "steps.jsonl").write_text("\n".join(steps) + "\n")
    for cache in run_dir.glob(".analysis*"):
        for f in cache.iterdir():
            f.unlink()


def test_records_whose_key_missed_a_setting_are_refused_naming_it(tmp_path):
    for job, start in enumerate(("1.0", "0.25")):
        run_sweep(quick_setup([*SWEEP, f"adaptive.start={start}"]), tmp_path / str(job))
    _as_the_old_key_would(tmp_path / "0")
    _as_the_old_key_would(tmp_path / "1")
    runs = load_runs(tmp_path, cache=False)
    assert runs.trials["trial_key"].duplicated().sum() == 20  # every trial of job 1 shares a key with job 0
    with pytest.raises(PoolingError, match=r"adaptive\.start: 1\.0 vs 0\.25") as e:
        without_repeats(runs.trials, runs.steps, runs.settings)
    assert "\n" not in str(e.value)
    from dvoc_bench.report import main

    assert main([str(tmp_path), "--no-figures", "--out", str(tmp_path / "rep")]) == 2


def test_one_key_with_two_specs_is_refused_naming_the_field(multirun):
    runs = load_runs(multirun)
    t = runs.trials.copy()
    job = t["run_dir"].str[-1]
    second = t.index[job == "1"][0]
    first = t.index[(job == "0") & (t["method"] == t.loc[second, "method"])][0]
    t.loc[second, "trial_key"] = t.loc[first, "trial_key"]
    t.loc[second, "sampling"] = "temperature=0.7"
    with pytest.raises(PoolingError, match=r"sampling \(- vs temperature=0\.7\)"):
        without_repeats(t, runs.steps, runs.settings)


def test_a_true_rerun_is_counted_once_even_when_the_model_answered_anew(multirun):
    """Same key, same spec, runs made with the same settings: a re-run (a real model may answer otherwise
    each time); the first is kept."""
    runs = load_runs(multirun)
    t = runs.trials[runs.trials["run_dir"].str.endswith("0")]
    again = t.copy()
    again["run_dir"] = again["run_dir"] + "-again"
    again["final_x"] = again["final_x"] + 50.0
    both = t._append(again, ignore_index=True)
    settings = {**runs.settings, str(again["run_dir"].iloc[0]): runs.settings[str(t["run_dir"].iloc[0])]}
    kept, _, n = without_repeats(both, runs.steps, settings)
    assert n == len(t) and len(kept) == len(t)
    assert (kept["final_x"].to_numpy() == t["final_x"].to_numpy()).all()


def test_records_whose_key_saw_every_setting_are_one_trial_whatever_they_answered(multirun):
    """A key that saw every setting names one trial: two records of it are a re-run (a model may answer anew
    each time, a call may fail in one job), never refused; the record that ran is kept over an error."""
    runs = load_runs(multirun)
    t = runs.trials[runs.trials["run_dir"].str.endswith("0")]
    again = t.copy()
    again["run_dir"] = again["run_dir"].str[:-1] + "1"  # job 1's settings differ (adaptive.start)
    again["final_x"] = again["final_x"] + 50.0
    first = t.copy()
    first.loc[first.index[0], "status"] = "error"  # a transient failure in the first job
    kept, _, n = without_repeats(first._append(again, ignore_index=True), runs.steps, runs.settings)
    assert n == len(t) and len(kept) == len(t)
    key = t["trial_key"].iloc[0]
    assert kept[kept["trial_key"] == key]["status"].tolist() == ["ok"]  # the one that ran
    assert kept[kept["trial_key"] == key]["run_dir"].str.endswith("1").all()


def test_one_key_under_two_configs_of_its_model_is_refused(multirun):
    runs = load_runs(multirun)
    t = runs.trials[runs.trials["run_dir"].str.endswith("0")]
    again = t.copy()
    again["run_dir"] = again["run_dir"] + "-other"
    other = {**runs.settings[str(t["run_dir"].iloc[0])]}
    other["models"] = [m.replace("@", "@0000") for m in other["models"]]
    settings = {**runs.settings, str(again["run_dir"].iloc[0]): other}
    with pytest.raises(PoolingError, match="two configs of model sim-gemma-4-31b"):
        without_repeats(t._append(again, ignore_index=True), runs.steps, settings)


def test_a_report_over_a_run_read_under_another_path_still_sees_its_settings(multirun, tmp_path):
    """The analysis cache keeps the path a run was read by; the rows name the path given now, so the
    settings (keyed by it) are found."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(multirun, copy)
    load_runs(copy / "0")  # writes the cache under this path
    moved = tmp_path / "moved"
    copy.rename(moved)
    runs = load_runs(moved / "0")
    assert set(runs.trials["run_dir"]) == {str(moved / "0")} and str(moved / "0") in runs.settings
