"""One interval per set of trials and rule across the report (issue 52 item 9): the main table, the budget
tables, the stop-rule table and the dataset tables give the same trials the same interval, clustered by
sample (the unit said once in the report's header), and each pair of methods is compared once."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from dvoc_bench.analysis import budget, compare, honest, load_runs, report
from dvoc_bench.analysis.intervals import DIFF_INTERVAL, RATE_INTERVAL, rate_interval
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.sweep import run_sweep

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """sim-gemma-4-31b (a model whose DVOC misses from some starts), DVOC and one-shot on three scenes from
    five start points: 15 trials per method, 5 per sample."""
    out = tmp_path_factory.mktemp("one_interval") / "run"
    setup = quick_setup(["models=[sim-gemma-4-31b]", "methods=[dvoc,oneshot]", "tasks=[S1,S2,S3]",
                         "run.frames=none", "run.quiet=true"])  # fmt: skip
    run_sweep(setup, out)
    return out


def by_hand(run: Path, method: str) -> tuple[float, float]:
    """The interval clustered by sample, the clusters counted from trials.jsonl by plain JSON reading."""
    cells: dict[str, list[int]] = defaultdict(list)
    for line in (run / "trials.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["method"] == method and r["status"] == "ok":
            cells[r["task"]].append(int(r["hit"]))
    kc, nc = [sum(v) for v in cells.values()], [len(v) for v in cells.values()]
    return rate_interval(sum(kc), sum(nc), clusters=(kc, nc))


def test_every_table_gives_the_same_trials_the_same_interval(run):
    runs = load_runs(run)
    t, s = runs.trials, runs.steps
    summ = honest.summary(t, "hit", n_boot=20).set_index("method")
    curve = budget.curve(t, s, "hit")
    stops = budget.stop_rules(t, s, "hit").set_index("method")
    for method in ("dvoc", "oneshot"):
        want = by_hand(run, method)
        assert (summ.loc[method, "rate_lo"], summ.loc[method, "rate_hi"]) == pytest.approx(want)
        last = curve[(curve["method"] == method) & (curve["k"] == curve["k"].max())].iloc[0]
        assert (last["lo"], last["hi"]) == pytest.approx(want)  # every trial ran to its end by then
        if method in stops.index:
            assert (stops.loc[method, "self_lo"], stops.loc[method, "self_hi"]) == pytest.approx(want)
    # the start points of one sample are one cluster: DVOC's five starts on a scene are not five samples
    dvoc = t[(t["method"] == "dvoc") & t["valid"]]
    k, n = int(dvoc["hit"].sum()), len(dvoc)
    per_start = dvoc.groupby(["task", "start_index"])["hit"].agg(["sum", "size"])
    if 0 < k < n:
        assert by_hand(run, "dvoc") != pytest.approx(
            rate_interval(k, n, clusters=(per_start["sum"].to_numpy(), per_start["size"].to_numpy()))
        )


def test_the_report_names_one_unit_and_compares_each_pair_once(run, tmp_path):
    text, _ = report.build_report([str(run)], [], "hit", tmp_path / "rep", n_boot=20, figures=False)
    assert text.count("**The unit is the sample.**") == 1
    head = text[: text.index("## Our runs")]
    assert RATE_INTERVAL in head and RATE_INTERVAL == "Wilson 95 %, clustered by sample"
    assert "first input" not in text and "interval over pairs" not in text
    assert "Paired: DVOC vs one-shot" not in text
    # every rate table states the one interval; no other interval of a rate is named
    assert text.count(f"interval: {RATE_INTERVAL}") >= 4
    assert "clustered by" not in text.replace(RATE_INTERVAL, "").replace(DIFF_INTERVAL, "")
    # DVOC vs one-shot: one row, in the one paired section
    assert text.count("Paired comparisons of methods on the same samples") == 1
    assert sum(1 for line in text.splitlines() if line.startswith("| ") and "| dvoc | oneshot |" in line) == 1


def test_the_one_paired_comparison_clusters_by_sample(run):
    t = load_runs(run).trials
    (row,) = compare.method_pairs(t, "hit").to_dict("records")
    assert (row["a"], row["b"], row["pairs"], row["samples"]) == ("dvoc", "oneshot", 15, 3)
    assert row["lo"] <= row["diff"] <= row["hi"]
