"""The report (behind ``python -m dvoc_bench.report``): :func:`build_report` builds every table and figure
from the records only: for our runs, the tables under one explicit rule with Wilson / bootstrap intervals,
the authors' rule for comparison, per-task and ablation tables, the paired comparisons of methods on the
same samples, the coordinate-frame audit, the cost per successful click and the figures; for the authors'
records (``upstream``: their repository's clone, its ``artifacts/previous_runs`` folder, the per-trial
tree or any of their JSON files), the paper's tables with every published number checked, the same
records re-scored under one rule, and the frame audit. It returns the markdown and writes
``report.md`` plus ``figures/*.png`` to ``out``, replacing the figures of a previous report there
(default, :func:`default_out`: ``<RUN_DIR>/report`` for one run; for several, a new folder beside the first
named after them, ``report-<a>+<b>``; ``runs/report`` with only upstream records).

:func:`export_runs` writes the runs' per-trial export (``.parquet`` or ``.jsonl``, the schema of
:mod:`dvoc_bench.analysis.export`); ``imports`` adds the trials of such files (ours, or another harness's
predictions in that schema, scored by this project's rules) to the report.

pandas and matplotlib are imported inside the functions: the door imports this module only once its
arguments are parsed, and the sections import what they draw with.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dvoc_bench.analysis.intervals import DIFF_INTERVAL, RATE_INTERVAL, UNIT
from dvoc_bench.analysis.markdown import escape_inline, escape_text
from dvoc_bench.analysis.schema import keep_rows
from dvoc_bench.core.rundir import REPORT
from dvoc_bench.core.scoring import RULES

SIM_NOTE = (
    "Rows marked **[SIMULATED]** and figures titled **SIMULATED** come from the simulated VLM (calibrated on "
    "the authors' records), not from a real model. A marker that names an assumption, e.g. "
    "**[SIMULATED; overlay effect assumed]**, means the row was produced under a knob the profile was not "
    "fitted for (its `sim.fitted_for`): the simulator's answer to that knob is an assumption, not a "
    "measurement."
)

UNIT_NOTE = (
    f"**The unit is the {UNIT}.** Every success rate of this report, its tables and figures, has one "
    f"interval, {RATE_INTERVAL}: the trials of one {UNIT} (a task: a scene, page, window or dataset "
    "sample, run from several start points and repeats) are one cluster, so they count once toward the "
    "sample size when they agree. Each pair of methods is compared once, paired on the same samples with "
    f"{DIFF_INTERVAL} (*Paired comparisons of methods*)."
)
"""The report's header line on its one interval and its unit."""


class Report:
    """Markdown lines and figures of one report."""

    def __init__(self, out: Path, figures: bool) -> None:
        self.out = out
        self.figures = figures
        self.lines: list[str] = []
        self.n_fig = 0

    def h(self, level: int, text: str) -> None:
        self.lines += ["", "#" * level + " " + escape_text(" ".join(text.split())), ""]

    def p(self, text: str) -> None:
        """A paragraph; its HTML characters are written as entities (outside code spans): the text may carry
        names and messages from the records."""
        self.lines += [escape_text(text), ""]

    def table(self, md: str) -> None:
        self.lines += [md, ""]

    def fig(self, fig: Any, name: str, caption: str) -> None:
        if not self.figures:
            return
        from dvoc_bench.analysis.plots import save

        self.n_fig += 1
        path = save(fig, self.out / "figures" / f"{self.n_fig:02d}_{name}.png")
        self.lines += [f"![{escape_inline(caption)}](figures/{path.name})", ""]

    def blocks(self, blocks: list[tuple[Any, ...]]) -> None:
        """Render the blocks of :mod:`dvoc_bench.analysis.equal_cost`."""
        for b in blocks:
            if b[0] == "h":
                self.h(b[1], b[2])
            elif b[0] == "p":
                self.p(b[1])
            elif b[0] == "table":
                self.table(b[1])
            else:
                self.fig(*b[1:])

    def text(self) -> str:
        return "\n".join(self.lines).strip() + "\n"


def _n_calls(t: Any, s: Any) -> int:
    """The model calls of the trials: their call records, and the stated count of a trial that has none (an
    imported prediction without its calls)."""
    if "model_calls" not in t or t.empty:
        return len(s)
    keys = set(zip(s["run_dir"], s["trial_key"], strict=True)) if len(s) else set()
    bare = [(r, k) not in keys for r, k in zip(t["run_dir"], t["trial_key"], strict=True)]
    return len(s) + int(t.loc[bare, "model_calls"].fillna(0).sum())


def _runs_section(rep: Report, runs: Any, rule: str, seed: int, n_boot: int) -> None:
    from dvoc_bench.analysis import honest, paper, plots
    from dvoc_bench.analysis.markdown import label_models, md_table, pct, px, summary_view, usd

    t, s = runs.trials, runs.steps
    rep.h(2, "Our runs")
    rep.p("Sources: " + ", ".join(f"`{x}`" for x in runs.sources))
    rep.p(
        f"{len(t)} trials ({int(t['valid'].sum())} valid, {int((t['status'] == 'error').sum())} errors, "
        f"{int((t['status'] == 'skipped').sum())} skipped), {_n_calls(t, s)} model calls."
    )
    from dvoc_bench.analysis.viewer import failure_links

    if links := failure_links(t, rep.out):  # the viewer's pages of the failed trials (docs/viewer.md)
        rep.p("Failed trials (linked: their pages in the run viewer):\n\n" + "\n".join(links))
    t, s, n_dup = honest.without_repeats(t, s, runs.settings)
    if n_dup:
        rep.p(
            f"{n_dup} trials are the same trial (same key, which hashes every field of the trial's spec: "
            "model and its config, scene, method, knobs, settings blocks, start point, repeat and seed; "
            "same spec, and the same outcome or runs made with the same settings) run again by another job "
            "of the sweep, e.g. the one-shot trials of every job of an `alphas=` multirun: every table and "
            "figure counts each key once (first job)."
        )
    if runs.simulated:
        rep.p(SIM_NOTE)

    # every knob the run varied splits the headline (alpha, overlay, predict, protocol, detector, ...)
    by = honest.headline_keys(t)
    split = by[2:]
    from dvoc_bench.analysis import budget, equal_cost

    curve = budget.curve(t, s, rule, by=by)
    rep.blocks(equal_cost.headline_blocks(curve))  # the report opens with success against cost
    rep.h(3, f"Success by model and method{''.join(f' and {k}' for k in split)} — rule `{rule}`")
    rep.p(
        f"Rule: {honest.RULE_TEXT[rule]}. Rate over valid trials, interval: {honest.RATE_INTERVAL}; raw "
        "rate over all trials that ran (errors count as failures), same interval; mean distance with a "
        f"percentile bootstrap 95 % interval (seed {seed}, {n_boot} resamples)."
    )
    summ = honest.summary(t, rule, by=by, n_boot=n_boot, seed=seed)
    rep.table(md_table(summary_view(summ)))
    rep.fig(plots.success_bars(summ), "success", f"success rates with {honest.RATE_INTERVAL} intervals")

    dataset = "scene_kind" in t and bool((t["scene_kind"] == "dataset").any())
    if dataset:
        _dataset_section(rep, t, rule)
    if "episode" in t and bool(t["episode"].notna().any()):  # MiniWoB pages and GTK programs alike
        _episodes_section(rep, t)
    _absent_section(rep, t)
    _phones_section(rep, t)

    rep.h(3, "The same trials under every rule")
    rep.table(md_table(label_models(honest.rules_side_by_side(t, by=by)), {k: pct for k in RULES}))

    rep.h(3, "Table 4.1 layout with the authors' rule (for comparison only)")
    rep.p(
        "The authors' code rule `hit_radius` (distance < max(w/2, h/2, 30)), raw rate over all trials, "
        "protocol rate over valid ones, means over valid trials."
    )
    rep.table(
        md_table(
            label_models(by_split(t, split, lambda g: honest.with_assumed(paper.table_4_1(g), g, KEYS))),
            {"raw_rate": pct, "proto_rate": pct, "mean_dist": px, "mean_iters": px},
        )
    )

    if (t["method"] == "dvoc").any() and not dataset:  # a dataset has too many tasks for these
        rep.h(3, f"DVOC per task — rule `{rule}`")
        rep.table(md_table(summary_view(honest.per_task(t, rule, split=split, n_boot=n_boot, seed=seed))))
        rep.fig(plots.heatmap(t, rule, split=split), "heatmap", "model x task success")
        rep.fig(plots.distance_vs_iteration(s, split=split), "distance_vs_iteration", "distance vs iteration")
        first, where = first_split(t, split)  # trajectories of one setting of the varied knobs, named
        drawable = (first["method"] == "dvoc") & first["image_w"].notna()  # an import may not know the size
        for task in list(dict.fromkeys(first.loc[drawable, "task"]))[:2]:
            dvoc_task = first[(first["method"] == "dvoc") & (first["task"] == task)]
            for model in list(dict.fromkeys(dvoc_task["model"]))[:3]:
                rep.fig(
                    plots.trajectories(first, s, task, model=model),
                    f"trajectories_{task}_{model}",
                    f"trajectories on {task}, {model}{where}",
                )
    rep.fig(plots.distance_cdf(t, split=split), "distance_cdf", "final distance CDF")

    for knob in honest.varying_knobs(t):
        rep.h(3, f"Ablation: `{knob}` (DVOC) — rule `{rule}`")
        rep.p(
            f"Interval: {honest.RATE_INTERVAL}. The settings compared pair by pair on the same samples: "
            "*Paired comparisons of methods* below (each setting is a variant of the method)."
        )
        rep.table(md_table(summary_view(honest.ablation(t, knob, rule, n_boot=n_boot, seed=seed))))

    if "variation" in t and t["variation"].nunique(dropna=True) > 1:  # the variation axes (variation.md)
        from dvoc_bench.analysis.variation import report_section

        report_section(rep, t, rule)

    _audit(rep, s)

    rep.h(3, "Spend: calls, tokens and dollars")
    cost = honest.cost_table(t, rule, by=by)
    if cost.empty:
        rep.p("No cost recorded for these trials.")
    else:
        rep.p(
            f"Totals over the trials that ran (successes by rule `{rule}`); cost = the sum of the recorded "
            "call costs (a simulated model costs $0). The cost per successful click, with its interval, is "
            "in the table of that name below."
        )
        rep.table(md_table(label_models(cost.drop(columns=["cost_per_success"])), {"cost_usd": usd}))
    from dvoc_bench.analysis.budget import under_reported

    low = under_reported(s)
    if len(low):
        rep.p(
            "Usage reported far below the harness's own estimate (under a quarter of it, prompt or "
            "completion; the estimate: prompt text and tool schemas at 4 characters a token, the image "
            "sent by its provider's rule, the reply likewise): these calls are priced, and were charged to "
            "the budget, with the larger counts. Both, summed over those calls (tokens input/output):"
        )
        rep.table(md_table(label_models(low), {"reported_usd": usd, "charged_usd": usd}))

    rep.blocks(equal_cost.blocks(t, s, rule, by, curve=curve, seed=seed, n_boot=n_boot))


def _absent_section(rep: Report, t: Any) -> None:
    """Refusals and false clicks on absent targets beside the hit rate on present ones (docs/absent.md)."""
    from dvoc_bench.analysis import absent, honest
    from dvoc_bench.analysis.markdown import label_models, md_table

    if not absent.has_absent(t):
        return
    tab = absent.absent_table(t)
    rep.h(3, "Absent targets: refusals and false clicks")
    rep.p(
        f"Rule: {absent.RULE_TEXT}. Over the trials that ran; interval: {absent.INTERVAL}. `offer_absent`: "
        "whether the request offered the not-present answer (a model never offered it cannot refuse)."
    )
    rep.table(md_table(label_models(honest.with_assumed(absent.table_view(tab), t, absent.KEYS))))
    rep.fig(absent.figure(tab), "absent", f"refusal and false-click rates with {absent.INTERVAL} intervals")


def _dataset_section(rep: Report, t: Any, rule: str) -> None:
    """The tables the field reports on a dataset (:mod:`dvoc_bench.analysis.datasets`)."""
    from dvoc_bench.analysis import datasets
    from dvoc_bench.analysis.markdown import label_models, md_table, pct, px

    rep.h(3, "Dataset accuracy (the tables the field reports)")
    rep.p(
        f"Rule `{rule}`: {_rule_text(rule)}"
        + (" (the official ScreenSpot metric)" if rule == "hit" else "")
        + f". accuracy = hits / trials that ran (an error is a miss); samples and trials are counted, the "
        f"{datasets.INTERVAL} interval [lo, hi] takes the sample as the unit (a sample's repeats count "
        "once); calls_per_success = model calls of those trials / hits."
    )
    if bool(t.loc[t["scene_kind"] == "dataset", "simulated"].any()):
        rep.p(
            "**[SIMULATED]** rows on a dataset lie outside the simulator's calibration (fitted on the "
            "paper's 800x600 scenes): they exercise the pipeline and the tables; they measure no model."
        )
    for title, tab in datasets.tables(t, rule):
        rep.h(4, title)
        fmt = {"accuracy": pct, "lo": pct, "hi": pct, "calls_per_success": px}
        fmt |= {c: pct for c in tab.columns if str(c).startswith(("from_", "to_"))}  # a drag's shares per end
        rep.table(md_table(label_models(tab), fmt))


def _episodes_section(rep: Report, t: Any) -> None:
    """Episodes (MiniWoB pages, GTK programs), scored by the page's or program's own verdict
    (:mod:`dvoc_bench.analysis.episodes`)."""
    from dvoc_bench.analysis import episodes
    from dvoc_bench.analysis.markdown import label_models, md_table, pct

    e = episodes.episode_rows(t)  # every trial that holds an episode, whatever its scene kind
    rep.h(3, "Episodes (MiniWoB++ pages and GTK programs, their own verdict)")
    rep.p(
        "success = episodes the page ended with a raw reward above 0 (its time penalty ignored), or the "
        "program's own verdict (its output, its state read through AT-SPI) / episodes; "
        "locate = grounded points on their step's target element / grounded points; interact = steps whose "
        f"intended state change happened / steps; every [lo, hi] is {episodes.SUCCESS_INTERVAL} (the "
        "episode is the unit; episodes on one task and page seed are one cluster); calls_per_success, "
        "usd_per_success = model calls, cost of all episodes / successes; first_wrong = the first step off "
        "target of each failed episode (none off target: the action, plan or page failed); seconds per "
        "step: harness (captures, page reads, hit test, the action) and grounding (the method). planner: "
        "who planned the steps, the task's oracle or the model (episode.plan=model; a simulated model plans "
        "by the oracle); a model-planned step is located against the oracle's target when the oracle's "
        "step has the same action, else not counted."
    )
    fmt = {
        k: pct
        for k in ("success", "lo", "hi", "locate", "locate_lo", "locate_hi", "interact", "interact_lo",
                  "interact_hi")
    }  # fmt: skip
    splits = (
        ("per task family", ["model", "simulated", "planner", "family", "method"]),
        ("per task", ["model", "simulated", "planner", "task", "method"]),
    )
    for title, by in splits:
        rep.h(4, f"Episodes {title}")
        rep.table(md_table(label_models(episodes.summarise(e, by)), fmt))
    pairs = episodes.paired(e)
    if not pairs.empty:
        rep.h(4, "Episodes: methods compared on the same episodes")
        rep.p(
            "Pairs: the same model, task, page seed, start point and repeat; diff = success(a) - success(b) "
            f"(the page's verdict), [lo, hi] {episodes.PAIRED_INTERVAL}; a_only / b_only: discordant pairs; "
            "mcnemar_p: McNemar's exact two-sided test; wins / ties / losses of a over the (task, seed) "
            "episodes."
        )
        cols = ["model", "simulated", "a", "b", "pairs", "episodes (task, seed)", "rate_a", "rate_b",
                "diff", "lo", "hi", "a_only", "b_only", "mcnemar_p", "wins", "ties", "losses", "rule",
                "assumed"]  # fmt: skip
        pf = {k: pct for k in ("rate_a", "rate_b", "diff", "lo", "hi")}
        rep.table(md_table(label_models(pairs[[c for c in cols if c in pairs]]), pf))
    if lines := episodes.failures(e):
        rep.p("Failed episodes (how each ended, the first step off target, why):\n\n" + "\n".join(lines))


def _phones_section(rep: Report, t: Any) -> None:
    """Phone trials: the hit rule beside AndroidControl's three conventions (:mod:`.phones`)."""
    from dvoc_bench.analysis import phones
    from dvoc_bench.analysis.markdown import label_models, md_table, pct

    tab = phones.table(t)
    if tab.empty:
        return
    rep.h(3, "Phones: the hit rule and AndroidControl's conventions")
    rep.p(
        "Trials on a phone (`web.device`), rates over trials that ran ok, each with its "
        f"{phones.INTERVAL} interval [lo, hi]: "
        + "; ".join(f"`{r}` = {phones.RULE_TEXT[r]}" for r in phones.RULES)
        + ". taps = trials tapped for real (`web.verify_click`), taps_agree = those whose tap's verdict "
        "(touch and click on the target) equals `hit`."
    )
    fmt = {k: pct for r in phones.RULES for k in (r, f"{r}_lo", f"{r}_hi")}
    rep.table(md_table(label_models(tab), fmt))


KEYS = ["model", "method"]
"""The keys of the authors' Table 4.1 layout."""


def by_split(t: Any, split: list[str], table: Any) -> Any:
    """``table(trials)`` once per setting of the knobs the run varied (``split``), their values as columns
    after model and method: a table that does not split by itself never pools what was varied."""
    import pandas as pd

    if not split:
        return table(t)
    parts = []
    for vals, g in t.groupby(split, dropna=False, sort=True):
        part = table(g)
        vals = vals if isinstance(vals, tuple) else (vals,)
        for i, (k, v) in enumerate(zip(split, vals, strict=True)):
            part.insert(min(2 + i, len(part.columns)), k, v)
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def first_split(t: Any, split: list[str]) -> tuple[Any, str]:
    """The DVOC trials of the first setting of the varied knobs, and a caption naming it (``""``: none)."""
    if not split:
        return t, ""
    dvoc = t[t["method"] == "dvoc"]
    if dvoc.empty:
        return t, ""
    first = dvoc.iloc[0]
    mask = (t[split] == first[split]).all(axis=1)
    return t[mask], " (" + ", ".join(f"{k}={first[k]}" for k in split) + ")"


def _audit(rep: Report, steps: Any, span_note: bool = False, upstream_tree: Path | None = None) -> None:
    from dvoc_bench.analysis import honest, plots
    from dvoc_bench.analysis.markdown import label_models, md_table, pct, px

    rep.h(3, "Coordinate-frame audit")
    if upstream_tree is not None:  # the authors' records: the headline table README.md and docs/paper.md show
        from dvoc_bench.analysis.headline import headline_block

        rep.p("The headline, restated from the authors' records (the table of README.md and docs/paper.md):")
        rep.table(headline_block(upstream_tree))
        rep.p("The same answers by model, method and whether the prompt carried the task, in every reading:")
    pts = honest.frame_audit_points(steps)
    if pts.empty:
        rep.p("No absolute answers (one-shot clicks, DVOC absolute mode) recorded.")
    else:
        rep.p(
            "Every recorded absolute answer read as pixels, as 0–1000 units and as 0–1 units "
            "(`x * (W-1) / scale`). `as_recorded` = the reading the harness used. `has_task`: whether the "
            "prompt carried the task instruction (`<NA>`: unknown, a wording rule or `ask_missing` rewrote "
            "it)."
        )
        fmt = {"hit": pct, "hit_radius": pct, "within_eps": pct, "median_err_px": px}
        rep.table(md_table(label_models(pts), fmt))
        if span_note:
            w = honest.frame_audit_points(steps, span="W")
            w = w[w["reading"] == "norm1000"]
            rep.p("The same 0–1000 reading with `x * W / 1000` (Gemini's documented rule):")
            rep.table(md_table(label_models(w), fmt))
        rep.fig(plots.frame_audit_bars(pts), "frame_audit", "frame audit")
    off = honest.frame_audit_offsets(keep_rows(steps, steps["kind"] == "verify"))
    if len(off):
        rep.p(
            "Relative offsets: fitted gain of the reported offset on the true offset, per axis "
            "(`gain0` through the origin; `gain`/`bias` with intercept). A model answering in 0–1000 units "
            "shows gain ≈ g = 1000/W, 1000/H; a pixel answer shows ≈ 1. `frame_*` = the nearest frame."
        )
        rep.table(
            md_table(
                label_models(off),
                {c: (lambda v: f"{v:.2f}") for c in off.columns if c.startswith(("gain", "bias", "g_"))},
            )
        )


def _upstream_section(rep: Report, paths: list[str], rule: str, seed: int, n_boot: int) -> None:
    from dvoc_bench.analysis import honest, paper, plots
    from dvoc_bench.analysis.markdown import label_models, md_table, pct, summary_view
    from dvoc_bench.analysis.upstream import MAIN_MODELS, discover_upstream, load_upstream

    roles: dict[str, Path] = {}
    for p in paths:
        roles.update(discover_upstream(p))
    rep.h(2, "The authors' records (DVOC paper)")
    rep.p("Found: " + (", ".join(f"{k} = `{v}`" for k, v in roles.items()) or "nothing usable"))
    rep.p(
        "Paper tables use the authors' exact rules: only the four main models, raw rate "
        "over all trials, protocol rate over valid ones, means over valid trials, their stored `success`. "
        "Each table is followed by a check of every published number; mismatches are listed, never adjusted."
    )
    main = roles.get("main")
    if main is not None:
        runs = load_upstream(main)
        t = runs.trials
        rep.p(f"Main benchmark from `{main}`: {len(t)} records.")
        if "tree" in roles:
            _tree_note(rep, roles["tree"], main)
        if Path(main).is_dir():
            rep.p(
                "Note: this is the per-trial tree; the authors' final aggregate `complete_results.json`, "
                "from which the paper's tables were printed, was not given. The tables below rebuild from "
                "the tree all the same, except Table 4.5 (see there)."
            )
        elif Path(main).stem != "complete_results":
            rep.p(
                f"Note: `{Path(main).name}` is not the authors' final aggregate (`complete_results.json`), "
                "from which the paper's tables were printed: differences from the published numbers are "
                "expected here (the earlier `benchmark_results.json` holds 218 of the 600 trials)."
            )
        for name in ("4.1", "4.2", "4.4", "4.5"):
            tab = paper.TABLES[name](t)
            rep.h(3, f"Table {name}")
            if name == "4.5":
                rep.p(
                    "**Not fully reproducible.** Gemini 3.1 FL's 90.7 px / 6.6 iterations are the mean of "
                    "per-task "
                    "means, and its 72 % is 17/24 = 70.8 % misprinted. The Gemma 26B / 31B distances and "
                    "iterations (47.0 px, 8.0; 54.0 px, 7.8) match no rule tried on the records."
                )
            rep.table(md_table(paper.formatted(name, tab)))
            _check(rep, paper.reproduction_check(name, tab))
        main_t = t[t["model"].isin(MAIN_MODELS)]
        rep.h(3, f"The same records under one rule — `{rule}`")
        rep.p(
            f"{honest.RULE_TEXT[rule]}. The authors' web boxes are inferred, so `hit` "
            "on "
            "W1–W5 is approximate; `hit_radius` is their own code's rule everywhere."
        )
        rep.table(md_table(summary_view(honest.summary(main_t, rule, n_boot=n_boot, seed=seed))))
        rep.p(
            "Protocol rate (valid trials) under each rule; `paper_success` is their stored, mixed-rule value:"
        )
        rep.table(
            md_table(
                label_models(honest.rules_side_by_side(main_t)), {k: pct for k in (*RULES, "paper_success")}
            )
        )
        rep.fig(
            plots.heatmap(
                main_t, rule, title=f"Authors' records, DVOC success by model and task (rule {rule})"
            ),
            "upstream_heatmap",
            "authors' records heat map",
        )
        rep.fig(
            plots.distance_vs_iteration(
                runs.steps[runs.steps["model"].isin(MAIN_MODELS)],
                title="Authors' records: DVOC true distance vs iteration",
            ),
            "upstream_distance_vs_iteration",
            "authors' records distance vs iteration",
        )
        from dvoc_bench.analysis import equal_cost

        rep.blocks(equal_cost.pairs_blocks(main_t, rule, split=[]))
        _audit(
            rep,
            runs.steps[runs.steps["model"].isin(MAIN_MODELS)],
            span_note=True,
            upstream_tree=roles.get("tree"),
        )
    for name, role, file in (
        ("5.1", "predict", "predict_ablation.json"),
        ("5.2", "overlay", "ablation_results.json"),
        ("5.3", "alpha", "alpha_ablation.json"),
    ):
        rep.h(3, f"Table {name}")
        if role not in roles:
            rep.p(
                f"Not reproduced here: the authors' `{file}` was not given "
                "(not every copy of the records has it)."
            )
            if name == "5.2":
                rep.p(
                    "Known from the authors' ablation file: two of its printed medians "
                    "(crosshair-only 22, full 24) do not follow from the records (25.3 and 29.4)."
                )
            continue
        ab = load_upstream(roles[role])
        tab = paper.TABLES[name](ab.trials)
        rep.table(md_table(paper.formatted(name, tab)))
        check = paper.reproduction_check(name, tab)
        _check(rep, check)
        if name == "5.2" and not check["match"].all():
            rep.p(
                "The differences are the medians: the records of `ablation_results.json` give the rebuilt "
                "values; the two printed medians (crosshair-only 22, full 24) follow from no rule tried on "
                "them. Every rate and mean of the table is rebuilt exactly."
            )
        if role == "predict":
            rep.p("The absolute answers re-read in 0–1000 units:")
            pts = honest.frame_audit_points(ab.steps, by=("model", "predict"))
            rep.table(md_table(label_models(pts), {"hit": pct, "hit_radius": pct, "within_eps": pct}))


def _tree_note(rep: Report, tree: Path, main: Path) -> None:
    """Which source the tables are built from, how the other one compares on Table 4.1, and what the
    per-trial tree holds beyond the main benchmark."""
    from dvoc_bench.analysis import paper
    from dvoc_bench.analysis.upstream import load_upstream, tree_extras

    extras = tree_extras(tree)
    source = "the final aggregate" if not Path(main).is_dir() else "the per-trial tree"
    text = f"The tables below are built from {source} (`{Path(main).name}`)."
    if Path(main) != Path(tree):
        t41 = paper.reproduction_check("4.1", paper.table_4_1(load_upstream(tree).trials))
        text += (
            f" Rebuilt from the per-trial tree's main benchmark instead, Table 4.1 reproduces "
            f"{int(t41['match'].sum())} of {len(t41)} published numbers."
        )
    if extras:
        listed = "; ".join(f"{len(v)} of method `{k}` ({', '.join(v[:3])}{', ...' if len(v) > 3 else ''})"
                           for k, v in extras.items())  # fmt: skip
        text += (
            f" The per-trial tree `{tree}` also holds trials that no aggregate lists: {listed}. They are not "
            "part of the main benchmark and are left out of Tables 4.1-4.5."
        )
    rep.p(text)


def _check(rep: Report, check: Any) -> None:
    """How many published numbers the rebuilt table reproduces, the differences, and every published cell
    beside the rebuilt one."""
    from dvoc_bench.analysis.markdown import md_table

    n, k = len(check), int(check["match"].sum())
    bad = check[~check["match"]]
    rep.p(f"Published numbers reproduced: **{k} of {n}**." + ("" if bad.empty else " Differences:"))
    if not bad.empty:
        rep.table(md_table(bad.drop(columns=["table", "match"])))
    every = check.drop(columns=["table"]).assign(match=check["match"].map({True: "yes", False: "**no**"}))
    rep.lines += ["<details><summary>Every published cell beside the rebuilt one</summary>", ""]
    rep.table(md_table(every))
    rep.lines += ["</details>", ""]


def build_report(
    run_dirs: list[str],
    upstream: list[str],
    rule: str = "hit",
    out: Path | None = None,
    *,
    seed: int = 0,
    n_boot: int = 2000,
    figures: bool = True,
    imports: list[str] | None = None,
    import_opts: dict[str, Any] | None = None,
) -> tuple[str, Path]:
    """Build the report; returns the markdown and the path of ``report.md``."""
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; allowed: {', '.join(RULES)}")
    runs = load_all(run_dirs, imports or [], import_opts)  # bad paths fail here, before anything is written
    if upstream:  # a path without the authors' records fails here, naming what was looked for
        from dvoc_bench.analysis.upstream import discover_upstream

        for p in upstream:
            discover_upstream(p)
    from dvoc_bench.analysis.foreign import import_out

    fmt = (import_opts or {}).get("fmt", "v1")
    out = out or import_out(run_dirs, imports or [], fmt) or default_out(run_dirs)
    out.mkdir(parents=True, exist_ok=True)
    for old in (out / "figures").glob("[0-9][0-9]_*.png"):  # a previous report's figures: not this one's
        old.unlink()
    rep = Report(out, figures)
    rep.lines += ["# dvoc-bench report", ""]
    rep.p(f"Honest tables use the rule **`{rule}`**: {_rule_text(rule)}.")
    rep.p(UNIT_NOTE)
    if imports:
        own = f", a folder of its own: no run's `{REPORT}/`"
        own = "" if run_dirs and out == default_out(run_dirs) else own
        rep.p(
            f"Imported ({fmt}): " + ", ".join(f"`{f}`" for f in imports) + f". This report is written to "
            f"`{out}`" + (own and own + " is written over") + "."
        )
    if runs is not None:
        _runs_section(rep, runs, rule, seed, n_boot)
        from dvoc_bench.analysis import import_check

        rep.blocks(import_check.blocks(runs.trials))
        from dvoc_bench.analysis import canary_report

        rep.blocks(canary_report.blocks(runs.sources))
    if upstream:
        _upstream_section(rep, upstream, rule, seed, n_boot)
    text = rep.text()
    path = out / "report.md"
    path.write_text(text, encoding="utf-8")
    return text, path


def load_all(run_dirs: list[str], imports: list[str], import_opts: dict[str, Any] | None = None) -> Any:
    """The trials of the run directories and of the imported files, as one ``Runs`` (``None``: neither)."""
    if not run_dirs and not imports:
        return None
    from dvoc_bench.analysis import Runs, load_runs
    from dvoc_bench.analysis.foreign import load_import

    opts = import_opts or {}
    parts = ([load_runs(*run_dirs)] if run_dirs else []) + [load_import(f, **opts) for f in imports]
    return parts[0] if len(parts) == 1 else Runs.concat(*parts)


def export_runs(
    run_dirs: list[str], imports: list[str], path: Path, import_opts: dict[str, Any] | None = None
) -> str:
    """Write the export of the runs to ``path``; returns the line that says what was written."""
    from dvoc_bench.analysis.budget import lacking
    from dvoc_bench.analysis.export import export

    runs = load_all(run_dirs, imports, import_opts)
    export(runs, path)
    miss = lacking(runs.trials, runs.steps)
    notes = [f"; no {k} recorded for {', '.join(v)} (null columns)" for k, v in miss.items() if v]
    return f"exported {len(runs.trials)} trials to {path}" + "".join(notes)


def default_out(run_dirs: list[str]) -> Path:
    """Where a report goes without ``--out``: ``<run>/report`` for one run (or one sweep folder); for
    several, a new folder beside the first, named after them (``report-<a>+<b>``, ``+N-more`` beyond three),
    so no run's own report is overwritten; ``runs/report`` with only ``--upstream``."""
    if not run_dirs:
        return Path("runs") / REPORT
    paths = [Path(p).resolve() for p in run_dirs]
    if len(paths) == 1:
        return paths[0] / REPORT
    names = [p.name for p in paths]
    name = "+".join(names[:3]) + (f"+{len(names) - 3}-more" if len(names) > 3 else "")
    return paths[0].parent / f"report-{name}"


def _rule_text(rule: str) -> str:
    from dvoc_bench.analysis.honest import RULE_TEXT

    return RULE_TEXT[rule]
