"""The report's equal-cost sections, as blocks a report renders: the headline figure (success against cost
per trial), accuracy at a budget (curves and the matched-budget table), self-stop vs oracle-stop vs
first-hit, the paired method comparisons and the cost per successful click.

:func:`headline_blocks` and :func:`blocks` return ``("h", level, text)``, ``("p", text)``, ``("table",
markdown)`` and ``("fig", figure, name, caption)`` tuples; ``dvoc_bench.report`` renders them. Every table
names its rule, its interval and its unit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from dvoc_bench.analysis import budget, compare
from dvoc_bench.analysis.honest import RULE_TEXT
from dvoc_bench.analysis.markdown import label_models, md_table, pct, px

Block = tuple[Any, ...]


def _f2(v: Any) -> str:
    return px(v)


def _simulated_note(t: pd.DataFrame) -> list[Block]:
    if not bool(t["simulated"].astype(bool).any()):
        return []
    return [("p", "Simulated models report placeholder tokens and cost nothing: their rows are compared in "
                  "calls only (their token and dollar columns are left empty).")]  # fmt: skip


def headline_blocks(curve: pd.DataFrame) -> list[Block]:
    """The figure the report opens with."""
    from dvoc_bench.analysis import plots

    if curve.empty:
        return []
    return [
        ("h", 3, "Headline: success against cost per trial"),
        (
            "p",
            f"Rule `{curve['rule'].iloc[0]}`; interval: {budget.INTERVAL}; each marker is a "
            "call budget k: the point the method would act on had it been stopped after k calls "
            "(see *Accuracy at a budget*).",
        ),  # fmt: skip
        ("fig", plots.headline(curve), "headline", "success against cost per trial"),
    ]


def blocks(
    t: pd.DataFrame,
    s: pd.DataFrame,
    rule: str,
    by: Sequence[str],
    *,
    curve: pd.DataFrame | None = None,
    seed: int = 0,
    n_boot: int = 2000,
) -> list[Block]:
    """Every equal-cost section for trials ``t`` and their steps ``s``, grouped by ``by`` (model, method
    and every knob the run varied)."""
    from dvoc_bench.analysis import plots

    by = list(by)
    out: list[Block] = []
    curve = budget.curve(t, s, rule, by=by) if curve is None else curve
    rule_line = f"Rule: {RULE_TEXT[rule]}; interval: {budget.INTERVAL}"
    web = "hit_rule" in t and bool((t["hit_rule"].fillna("box") != "box").any()) and rule == "hit"
    out += [("h", 3, f"Accuracy at a budget — rule `{rule}`")]
    out += [("p", f"{rule_line}. A trial stopped after k calls acts on the point its own rule would act on "
                  "then: DVOC's draft after its last correction, the last usable answer of one-shot, zoom "
                  "and their refinements, the chosen mark of Set-of-Mark; from k = the calls it made on, its "
                  "own final point. Valid trials; computed from the step records alone."
                  + (" Web and desktop trials score their earlier iterates by the target box (their final "
                     "`hit` is the DOM's or the toolkit's verdict)." if web else ""))]  # fmt: skip
    out += _simulated_note(t)
    if curve.empty:
        return [*out, ("p", "No valid trials.")]
    out += [("h", 4, f"Matched budgets (1, 2, 3, 5, 8, 15 calls) — rule `{rule}`")]
    out += [("p", f"{rule_line}. Each cell: rate [lo, hi] in percent at a budget of that many calls.")]
    out += [("table", md_table(label_models(budget.matched(curve))))]
    out += [("fig", plots.budget_curves(curve), "accuracy_at_budget", "accuracy at a call budget")]
    out += [("p", "What a trial spent on average up to each budget (calls; tokens, input + output, and "
                  "dollars where known):")]  # fmt: skip
    out += [("table", md_table(label_models(budget.matched(curve, what="spend"))))]

    stops = budget.stop_rules(t, s, rule, by=by)
    out += [("h", 3, f"Self-stop vs oracle-stop vs first-hit — rule `{rule}`")]
    out += [("p", f"{rule_line}. `self`: the method's own stop rule (the trial as it ran). `oracle`: the "
                  "best iterate in hindsight (success when any iterate succeeds; no deployed agent can "
                  "stop there). `first_hit`: stop at the first iterate that succeeds (the See-Point-Refine "
                  "rule, which stops on the ground truth): the oracle's success, with the calls to that "
                  "first hit. `gap` = oracle - self: what a better stop rule could gain. One-shot with "
                  "retries already stops on the harness's verdict: its self-stop is a first-hit rule.")
            ]  # fmt: skip
    if stops.empty:
        out += [("p", "No method made more than one call in a trial.")]
    else:
        f = {c: pct for c in stops.columns if c.endswith(("_rate", "_lo", "_hi")) or c == "gap"}
        f |= {c: _f2 for c in ("self_calls", "first_hit_calls", "self_median_dist", "oracle_median_dist")}
        out += [("table", md_table(label_models(stops), f))]

    out += pairs_blocks(t, rule)

    cps = budget.cost_per_success(t, rule, by=by, n_boot=n_boot, seed=seed)
    out += [("h", 3, f"Cost per successful click, with intervals — rule `{rule}`")]
    out += [("p", f"Rule: {RULE_TEXT[rule]}; unit: trial (every trial that ran: an error costs and misses); "
                  f"interval: {budget.BOOT_INTERVAL} (seed {seed}, {n_boot} resamples); `∞`: no success. "
                  "Tokens are input + output; dollars where every call's cost is known.")]  # fmt: skip
    out += _simulated_note(t)
    usd = {c: (lambda v: "-" if pd.isna(v) else ("∞" if v == float("inf") else f"${v:.5f}"))
           for c in ("usd_per_success", "usd_lo", "usd_hi")}  # fmt: skip
    out += [("table", md_table(label_models(cps), usd))]
    miss = budget.lacking(t, s)
    for what, models in miss.items():
        if models:
            out += [("p", f"No {what} recorded for: " + ", ".join(f"`{m}`" for m in models)
                          + f" (their {what} columns are empty).")]  # fmt: skip
    return out


def pairs_blocks(t: pd.DataFrame, rule: str, split: Sequence[str] | None = None) -> list[Block]:
    """The report's one paired comparison of each pair of methods (and of each pair of settings of a
    method): :func:`dvoc_bench.analysis.compare.method_pairs` (``split``: the knobs that make variants,
    default every knob the run varied)."""
    pairs = compare.method_pairs(t, rule, split=split)
    out: list[Block] = [("h", 3, f"Paired comparisons of methods on the same samples — rule `{rule}`")]
    out += [("p", f"Rule: {RULE_TEXT[rule]}; pairs: two trials of the same model on the same sample, start "
                  f"index and repeat, both valid; interval of `diff` = rate(a) - rate(b): "
                  f"{compare.DIFF_INTERVAL}; `mcnemar_p`: McNemar's exact test on the discordant pairs "
                  "(`a_only`, `b_only`); wins / ties / losses: samples where a's rate over its pairs is "
                  "above, equal to, below b's.")]  # fmt: skip
    if pairs.empty:
        return [*out, ("p", "No two methods ran on the same samples.")]
    f = {c: pct for c in ("rate_a", "rate_b", "diff", "lo", "hi")} | {"mcnemar_p": lambda v: f"{v:.3g}"}
    return [*out, ("table", md_table(label_models(pairs), f))]
