"""The variation axes read back (docs/variation.md): for each axis a run varied (the trials' ``variation``
column), the paired drop against the unvaried scene on the same start points and seeds, per model and
method, and the trials a wording skipped.

The comparison is the project's one paired comparison, :func:`dvoc_bench.analysis.compare.method_pairs`
(Newcombe's paired interval clustered by sample, McNemar's exact test), with ``variation`` as the knob that
makes variants: a varied trial pairs with the unvaried trial of its model, method, task, start index and
repeat. ``drop`` = rate(unvaried) - rate(varied): positive when the variation hurts.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from dvoc_bench.analysis import _layout as L
from dvoc_bench.analysis.compare import method_pairs
from dvoc_bench.analysis.honest import headline_keys

PAIR_ON = ("model", "method", "task", "start_index", "rep", "variation")
"""What one trial of a variant is: a side of a pair has one trial per these."""

UNVARIED = "-"
"""The ``variation`` of a trial on the unvaried scene."""

COLUMNS = ("model", "method", "variation", "pairs", "samples", "rate_unvaried", "rate_varied", "drop",
           "lo", "hi", "varied_only", "unvaried_only", "mcnemar_p", "simulated", "rule")  # fmt: skip
"""The columns of :func:`drops`."""


def _split_variant(v: str) -> tuple[str, str]:
    """``oneshot variation=web.zoom=0.5`` -> (``oneshot``, ``web.zoom=0.5``); no variation: ``-``. Other
    knobs a run varied stay with the method (``oneshot protocol=paper``)."""
    method, _, rest = v.partition(" variation=")
    return method, rest or UNVARIED


def drops(trials: pd.DataFrame, rule: str = "hit") -> pd.DataFrame:
    """Per model, method and variation: the paired drop from the unvaried trials (:data:`COLUMNS`), the
    interval ``lo``..``hi`` on the drop (Newcombe paired, clustered by sample), McNemar's exact p."""
    if "variation" not in trials.columns or trials["variation"].nunique(dropna=True) < 2:
        return pd.DataFrame(columns=list(COLUMNS))
    t = trials[~trials["trial_key"].duplicated(keep="first")] if "trial_key" in trials else trials
    # a job varying one kind of screen runs the other kind unvaried again; a program's screen can differ by
    # a pixel from launch to launch (another scene hash, another key): the first unvaried trial of each
    # pair key is the unvaried side
    # every other knob the run varied makes variants too (a protocol, an alpha...): never pooled into a side;
    # ``variation`` last, so a variant reads ``<method> <knob>=<v>... variation=<axes>``
    others = [k for k in headline_keys(t)[2:] if k != "variation"]
    again = (t["variation"] == UNVARIED) & t.duplicated([*PAIR_ON, *others], keep="first")
    t = t[~again]
    pairs = method_pairs(t, rule, split=[*others, "variation"])
    rows: list[dict[str, Any]] = []
    for _, p in pairs.iterrows():
        (ma, va), (mb, vb) = _split_variant(p["a"]), _split_variant(p["b"])
        if ma != mb or (va == UNVARIED) == (vb == UNVARIED):
            continue  # only a method against itself, varied against unvaried
        flip = va == UNVARIED  # method_pairs' diff is rate(a) - rate(b); the drop is unvaried - varied
        varied = vb if flip else va
        rate_v, rate_u = (p["rate_b"], p["rate_a"]) if flip else (p["rate_a"], p["rate_b"])
        v_only, u_only = (p["b_only"], p["a_only"]) if flip else (p["a_only"], p["b_only"])
        lo, hi = (p["lo"], p["hi"]) if flip else (-p["hi"], -p["lo"])
        grouped = "".join(f" {k}={p[k]}" for k in others if k in pairs.columns)  # what method_pairs grouped
        rows.append(dict(model=p["model"], method=ma + grouped, variation=varied, pairs=int(p["pairs"]),
                         samples=int(p["samples"]), rate_unvaried=rate_u, rate_varied=rate_v,
                         drop=rate_u - rate_v, lo=lo, hi=hi, varied_only=int(v_only),
                         unvaried_only=int(u_only), mcnemar_p=p["mcnemar_p"], simulated=bool(p["simulated"]),
                         rule=rule))  # fmt: skip
    out = pd.DataFrame(rows, columns=list(COLUMNS))
    return out.sort_values(["model", "method", "variation"], ignore_index=True)


def skipped(trials: pd.DataFrame) -> pd.DataFrame:
    """Trials skipped because no wording of the kind asked fits the target alone: per variation and task,
    how many, and the reason (``error_class`` ``wording``)."""
    if "error_class" not in trials.columns:
        return pd.DataFrame(columns=["variation", "task", "trials", "reason"])
    s = trials[(trials["status"] == "skipped") & (trials["error_class"] == "wording")]
    if s.empty:
        return pd.DataFrame(columns=["variation", "task", "trials", "reason"])
    g = s.groupby(["variation", "task"], sort=True)
    return g.agg(trials=("trial_key", "size"), reason=("error", "first")).reset_index()


def drops_figure(table: pd.DataFrame, title: str = "Paired drop under each variation") -> Figure:
    """One panel per model: the drop (unvaried - varied, percentage points) per variation with its
    interval, one marker series per method (at most five per panel). Panels of a simulated model say
    SIMULATED in their title."""
    from dvoc_bench.analysis.plots import SIM_TAG

    models = list(dict.fromkeys(table["model"])) or ["(none)"]
    axes_names = sorted(set(table["variation"]))
    size = (L.clamp(1.0 + 0.55 * len(axes_names), 6.0), 3.2 * len(models))
    fig = Figure(figsize=size, layout="constrained")
    for i, model in enumerate(models):
        ax = fig.add_subplot(len(models), 1, i + 1)
        sub = table[table["model"] == model]
        methods = list(dict.fromkeys(sub["method"]))[: L.MAX_SERIES]
        for j, method in enumerate(methods):
            m = sub[sub["method"] == method].set_index("variation").reindex(axes_names)
            xs = [k + (j - (len(methods) - 1) / 2) * 0.15 for k in range(len(axes_names))]
            y = 100 * m["drop"].astype(float).to_numpy()
            err = [100 * (m["drop"] - m["lo"]).astype(float).to_numpy(),
                   100 * (m["hi"] - m["drop"]).astype(float).to_numpy()]  # fmt: skip
            ax.errorbar(xs, y, yerr=err, fmt="o", color=L.color(j), capsize=3, label=method)
        ax.axhline(0.0, color="#777777", linewidth=0.8)
        ax.set_xticks(range(len(axes_names)))
        L.fit_xticklabels(fig, ax, axes_names)
        ax.set_ylabel("drop, points")
        sim = bool(sub["simulated"].any()) if len(sub) else False
        ax.set_title(f"{SIM_TAG}: {model}" if sim else model, fontsize=9)
        if methods:
            L.legend_outside(fig, ax, title="method")
    L.title(fig, title)
    L.footnote(fig, "drop = success unvaried - success varied on the same start points and seeds; bars: "
               "Newcombe paired 95 % interval, clustered by sample")  # fmt: skip
    return fig


def report_section(rep: Any, trials: pd.DataFrame, rule: str) -> None:
    """The report's *Variation axes* section: the drop table and figure, and the skipped wordings. ``rep``
    is the report being written (:class:`dvoc_bench.analysis.report.Report`)."""
    from dvoc_bench.analysis.honest import RULE_TEXT
    from dvoc_bench.analysis.markdown import md_table, pct

    table = drops(trials, rule)
    rep.h(3, f"Variation axes: paired drop against the unvaried scene — rule `{rule}`")
    rep.p(
        f"Rule: {RULE_TEXT[rule]}. Each varied trial is paired with the unvaried trial of the same model, "
        "method, task, start index and repeat (and seed); drop = success unvaried - success varied, in "
        "points of the rate over the pairs; interval: Newcombe's paired 95 % interval clustered by sample; "
        "p: McNemar's exact test on the discordant pairs. Rows of a simulated model are SIMULATED; the "
        "simulator does not model wording, so its wording rows measure the harness only."
    )
    if table.empty:
        rep.p("No varied trial pairs with an unvaried one.")
    else:
        view = table.drop(columns=["rule"]).copy()
        view["simulated"] = view["simulated"].map({True: "SIMULATED", False: "real"})
        rep.table(md_table(view, {k: pct for k in ("rate_unvaried", "rate_varied", "drop", "lo", "hi")}))
        rep.fig(drops_figure(table), "variation_drops", "paired drop under each variation axis")
    skip = skipped(trials)
    if len(skip):
        rep.p("Trials skipped: no wording of the kind asked fits the target alone (counted, not errors):")
        rep.table(md_table(skip))
