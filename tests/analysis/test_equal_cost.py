"""Accuracy at equal cost (dvoc_bench.analysis.budget, compare, equal_cost): the curve at k calls recounted
from steps.jsonl by plain JSON reading, the iterate at the last call is the trial's final point, the stop
rules, the paired interval's coverage and the paired comparisons, on a real simulated run of oneshot, dvoc
and zoom."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest

from dvoc_bench.analysis import budget, compare, load_runs
from dvoc_bench.analysis.intervals import paired_difference_interval
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.sweep import run_sweep

MODELS = "models=[sim-gemma-4-26b,sim-gemini-3.1-flash-lite]"
e2e = pytest.mark.e2e  # the tests on the run: building it takes a few seconds


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """Two simulated models, oneshot, dvoc and zoom on two scenes from five start points (60 trials)."""
    out = tmp_path_factory.mktemp("cost") / "run"
    setup = quick_setup([MODELS, "methods=[oneshot,dvoc,zoom]", "tasks=[S2,S5]", "run.frames=none",
                         "run.quiet=true"])  # fmt: skip
    run_sweep(setup, out)
    return out


def jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def recount(run: Path, k: int) -> dict[tuple[str, str], float]:
    """The success rate (rule hit) per (model, method) had every valid trial stopped after k calls, from
    the files alone: the last point a step moved to among the first k steps (before any, the start), the
    target box test; from k = the trial's calls on, its recorded verdict."""
    steps = defaultdict(list)
    for s in jsonl(run / "steps.jsonl"):
        steps[s["trial_key"]].append(s)
    wins: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for t in jsonl(run / "trials.jsonl"):
        if t["status"] != "ok":
            continue
        mine = sorted(steps[t["trial_key"]], key=lambda s: s["index"])
        if k >= len(mine):
            ok = t["hit"]
        else:
            point = t["start"]
            for s in mine[:k]:
                if s.get("next_draft") is not None:
                    point = s["next_draft"]
            x0, y0, x1, y1 = t["target_box"]
            ok = point is not None and x0 <= point[0] <= x1 and y0 <= point[1] <= y1
        wins[(t["model"], t["method"])].append(bool(ok))
    return {key: sum(v) / len(v) for key, v in wins.items()}


@e2e
def test_the_curve_at_k_calls_is_the_recount_from_steps_jsonl(run):
    runs = load_runs(run)
    curve = budget.curve(runs.trials, runs.steps, "hit")
    assert set(curve["method"]) == {"oneshot", "dvoc", "zoom"}
    checked = 0
    for k in (1, 2, 3, 5, 15):
        expected = recount(run, k)
        got = curve[curve["k"] == k]
        assert len(got) == len(expected) == 6
        for r in got.itertuples():
            assert r.rate == pytest.approx(expected[(r.model, r.method)], abs=1e-12), (k, r.model, r.method)
            assert r.lo <= r.rate <= r.hi
            checked += 1
    assert checked == 30
    # the curve is not flat everywhere: the budget matters for some method in this run
    assert curve.groupby(["model", "method"])["rate"].nunique().max() > 1


@e2e
def test_the_iterate_after_the_last_call_is_the_trials_final_point(run):
    runs = load_runs(run)
    it = budget.iterates(runs.trials, runs.steps)
    last = it[it["last"]].merge(runs.trials[["trial_key", "final_x", "final_y"]], on="trial_key")
    assert len(last) == int(runs.trials["valid"].sum()) == 60
    assert (last["k"] == last["model_calls"]).all()
    assert np.allclose(last["x"], last["final_x"]) and np.allclose(last["y"], last["final_y"])
    # cumulative tokens at the last call are the trial's own sums
    tok = last.merge(runs.trials[["trial_key", "tokens_in"]], on="trial_key", suffixes=("", "_trial"))
    assert (tok["tokens_in"] == tok["tokens_in_trial"].astype(float)).all()


@e2e
def test_matched_budget_table_and_stop_rules(run):
    runs = load_runs(run)
    t, s = runs.trials, runs.steps
    table = budget.matched(budget.curve(t, s))
    assert [c for c in table.columns if c.endswith("calls")] == [f"{k} calls" for k in budget.BUDGETS]
    stops = budget.stop_rules(t, s)
    assert {"dvoc", "zoom"} <= set(stops["method"])
    assert (stops["oracle_rate"] >= stops["self_rate"]).all()
    assert (stops["first_hit_rate"] == stops["oracle_rate"]).all()
    assert (stops["first_hit_calls"] <= stops["self_calls"]).all()
    # the oracle recounted by hand: any iterate k = 1..n inside the box
    files = {tr["trial_key"]: tr for tr in jsonl(run / "trials.jsonl")}
    steps = defaultdict(list)
    for st in jsonl(run / "steps.jsonl"):
        steps[st["trial_key"]].append(st)
    for r in stops.itertuples():
        hits = []
        for key, tr in files.items():
            if (tr["model"], tr["method"]) != (r.model, r.method):
                continue
            x0, y0, x1, y1 = tr["target_box"]
            pts = [
                st["next_draft"] for st in sorted(steps[key], key=lambda st: st["index"]) if st["next_draft"]
            ]
            hits.append(tr["hit"] or any(x0 <= p[0] <= x1 and y0 <= p[1] <= y1 for p in pts))
        assert r.oracle_rate == pytest.approx(sum(hits) / len(hits))


@e2e
def test_cost_per_success_in_calls_for_simulated_models(run):
    t = load_runs(run).trials
    cps = budget.cost_per_success(t, n_boot=200)
    for r in cps.itertuples():
        g = t[(t["model"] == r.model) & (t["method"] == r.method)]
        hits = int((g["valid"] & g["hit"]).sum())
        assert r.successes == hits
        assert r.calls_per_success == (pytest.approx(g["model_calls"].sum() / hits) if hits else float("inf"))
        if hits:
            assert r.calls_lo <= r.calls_per_success <= r.calls_hi
        assert np.isnan(r.tokens_per_success) and np.isnan(r.usd_per_success)  # placeholders: calls only


@e2e
def test_paired_methods_on_the_same_samples(run):
    t = load_runs(run).trials
    pairs = compare.method_pairs(t, "hit")
    assert len(pairs) == 2 * 3  # two models, three pairs of methods each
    files = jsonl(run / "trials.jsonl")
    for r in pairs.itertuples():
        side = {
            m: {(x["task"], x["start_index"], x["rep"]): x["hit"] for x in files
                if x["model"] == r.model and x["method"] == m and x["status"] == "ok"}
            for m in (r.a, r.b)
        }  # fmt: skip
        keys = side[r.a].keys() & side[r.b].keys()
        assert r.pairs == len(keys) == 10
        assert r.a_only == sum(side[r.a][k] and not side[r.b][k] for k in keys)
        assert r.b_only == sum(side[r.b][k] and not side[r.a][k] for k in keys)
        assert r.diff == pytest.approx((r.a_only - r.b_only) / r.pairs)
        assert -1 <= r.lo <= r.diff <= r.hi <= 1
        assert r.wins + r.ties + r.losses == r.samples == 2
        n_disc = r.a_only + r.b_only
        assert r.mcnemar_p == pytest.approx(binomtest(r.a_only, n_disc).pvalue if n_disc else 1.0)


def _coverage(
    n: int, probs: tuple[float, float, float, float], reps: int, seed: int, copies: int = 1
) -> float:
    """Share of ``reps`` simulated paired samples whose interval holds the true difference; with
    ``copies`` > 1 every pair is repeated ``copies`` times inside its cluster (a model that repeats itself),
    and the interval is the clustered one."""
    rng = np.random.default_rng(seed)
    truth = probs[1] - probs[2]
    cover = 0
    for _ in range(reps):
        cells = rng.choice(4, size=n, p=probs)  # 0 both, 1 a only, 2 b only, 3 neither
        d = np.repeat(np.select([cells == 1, cells == 2], [1.0, -1.0], 0.0), copies)
        counts = [float(np.sum(cells == c)) * copies for c in range(4)]
        clusters = (d.reshape(n, copies).sum(axis=1), np.full(n, float(copies))) if copies > 1 else None
        lo, hi = paired_difference_interval(*counts, clusters=clusters)
        cover += lo <= truth <= hi
    return cover / reps


@pytest.mark.parametrize("copies", [1, 5])
def test_the_paired_interval_covers_the_true_difference(copies):
    # Newcombe's interval holds its level closely; repeats that agree must not shrink it (clustered)
    cov = _coverage(60, (0.45, 0.2, 0.08, 0.27), reps=1500, seed=7, copies=copies)
    assert 0.93 <= cov <= 0.985, cov


def test_the_paired_interval_edges_and_bad_clusters():
    lo, hi = paired_difference_interval(10, 0, 0, 10)
    assert lo < 0 < hi  # no discordant pair: zero difference, an interval around it
    assert all(np.isnan(paired_difference_interval(0, 0, 0, 0)))  # no pairs
    lo, hi = paired_difference_interval(0, 20, 0, 0)
    assert hi == 1.0 and 0 < lo < 1
    # unclustered repeats claim more precision than the clustered interval of the same data
    plain = paired_difference_interval(30, 10, 5, 15)
    clus = paired_difference_interval(30, 10, 5, 15, clusters=([5.0] * 1 + [0.0] * 11, [5.0] * 12))
    assert clus[1] - clus[0] > plain[1] - plain[0]
    with pytest.raises(ValueError, match="clusters hold"):
        paired_difference_interval(30, 10, 5, 15, clusters=([1.0], [60.0]))


@e2e
def test_the_headline_figure_simulated_in_calls_real_in_calls_tokens_and_dollars(run):
    from dvoc_bench.analysis import plots
    from tests.support import problems

    runs = load_runs(run)
    t, s = runs.trials, runs.steps
    fig = plots.headline(budget.curve(t, s))
    assert plots.title_of(fig).startswith("SIMULATED") and problems(fig) == []
    # no tokens, no $ (its lines split over panels of at most five)
    assert {ax.get_xlabel() for ax in fig.axes} == {"calls spent per trial (mean)"}
    # the same calls as a priced real model: tokens and dollars panels, and dollars per success
    real_t = t.assign(simulated=False, simulated_assumptions="", cost_usd=t["tokens_in"].astype(float) * 1e-6)
    real_s = s.assign(simulated=False, cost_usd=s["tokens_in"].astype(float) * 1e-6)
    curve = budget.curve(real_t, real_s)
    fig = plots.headline(curve)
    assert "SIMULATED" not in plots.title_of(fig) and problems(fig) == []
    # calls, tokens and dollars, each in every row of panels
    labels = [ax.get_xlabel().split(" spent")[0] for ax in fig.axes]
    assert set(labels) == {"calls", "tokens", "dollars"} and len(labels) % 3 == 0
    one = curve[(curve["k"] == 1)]
    assert np.allclose(one["cost_usd"], one["tokens_in"] * 1e-6)
    cps = budget.cost_per_success(real_t, n_boot=100)
    for r in cps.itertuples():
        g = real_t[(real_t["model"] == r.model) & (real_t["method"] == r.method)]
        hits = int((g["valid"] & g["hit"]).sum())
        assert r.usd_per_success == pytest.approx(g["cost_usd"].sum() / hits)
        assert r.usd_lo <= r.usd_per_success <= r.usd_hi


@e2e
def test_a_dataset_run_reports_every_equal_cost_table(tmp_path):
    from dvoc_bench.analysis import report
    from dvoc_bench.scenes.dataset_fixture import write_fixture

    write_fixture(tmp_path / "ds", "manifest", (1920, 1080), screens=2, per_screen=2)
    setup = quick_setup([f"dataset.root={tmp_path / 'ds'}", "dataset=manifest", MODELS, "run.frames=none",
                         "methods=[oneshot,dvoc,zoom]", "starts=oneshot", "run.quiet=true"])  # fmt: skip
    run_sweep(setup, tmp_path / "run")
    text, _ = report.build_report(
        [str(tmp_path / "run")], [], "hit", tmp_path / "rep", n_boot=50, figures=True
    )
    first = text.index("### ")
    assert text[first:].startswith("### Headline: success against cost per trial")
    assert "figures/01_headline.png" in text
    assert (tmp_path / "rep" / "figures" / "01_headline.png").is_file()
    titles = ("Accuracy at a budget — rule `hit`", "Matched budgets (1, 2, 3, 5, 8, 15 calls)",
              "Self-stop vs oracle-stop vs first-hit", "Paired comparisons of methods on the same samples",
              "Cost per successful click, with intervals")  # fmt: skip
    for title in titles:
        assert title in text
    assert "interval: Wilson 95 %, clustered by sample" in text and "first input" not in text
    assert "Newcombe (Wilson) 95 %, paired, clustered by sample" in text
    assert "| dvoc | zoom | 4 | 4 |" in text  # a paired row per model: 4 pairs over 4 samples
    assert "[SIMULATED" in text and "accuracy_at_budget.png" in text
